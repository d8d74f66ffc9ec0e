#!/usr/bin/env bash
# Check an --emit recipe ($STDOUT of a golden case) against the names each
# framework documents, transcribed here from its source (not from
# src/report/emit.c, so that a misspelt flag there fails):
#   usage, from a case's `check`: bash ../check_emit.sh megatron|nemo|torchtitan|deepspeed
# The bash fragments must parse and, sourced in a scratch folder, define
# their array; every flag / key / TOML key must be a documented one; the
# torchtitan TOML and DeepSpeed's JSON must parse (when python3 is there).
set -eu
target=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
bad=0
unknown() { echo "$target: '$1' is not a documented name"; bad=1; }
member() { local x=$1 y; shift; for y in "$@"; do [ "$x" = "$y" ] && return 0; done; return 1; }

# Megatron-LM core_v0.15.0 megatron/training/arguments.py (add_argument names)
MLM=(--num-layers --hidden-size --ffn-hidden-size --num-attention-heads --group-query-attention
  --num-query-groups --kv-channels --max-position-embeddings --position-embedding-type --rotary-base
  --rotary-percent --normalization --norm-epsilon --swiglu --squared-relu --disable-bias-linear
  --add-qkv-bias --qk-layernorm --untie-embeddings-and-output-weights --hidden-dropout
  --attention-dropout --make-vocab-size-divisible-by --attention-backend --multi-latent-attention
  --q-lora-rank --kv-lora-rank --qk-head-dim --qk-pos-emb-head-dim --v-head-dim --num-experts
  --moe-router-topk --moe-ffn-hidden-size --moe-shared-expert-intermediate-size --moe-layer-freq
  --moe-token-dispatcher-type --moe-grouped-gemm --moe-permute-fusion --moe-router-fusion
  --overlap-moe-expert-parallel-comm --tensor-model-parallel-size --sequence-parallel
  --tp-comm-overlap --pipeline-model-parallel-size --pipeline-model-parallel-layout
  --num-layers-per-virtual-pipeline-stage --microbatch-group-size-per-virtual-pipeline-stage
  --context-parallel-size --cp-comm-type
  --expert-model-parallel-size --expert-tensor-parallel-size --use-distributed-optimizer
  --use-megatron-fsdp --data-parallel-sharding-strategy --no-gradient-accumulation-fusion --ckpt-format
  --overlap-grad-reduce --overlap-param-gather --ddp-bucket-size --recompute-granularity
  --recompute-method --recompute-num-layers --micro-batch-size --global-batch-size --seq-length --fp16
  --bf16 --fp8-format --accumulate-allreduce-grads-in-fp32 --grad-reduce-in-bf16 --moe-enable-deepep
  --moe-router-num-groups --moe-router-group-topk --moe-expert-capacity-factor
  --moe-pad-expert-input-to-capacity --mtp-num-layers --recompute-modules --fp8-recipe
  --use-precision-aware-optimizer --exp-avg-dtype --exp-avg-sq-dtype --cross-entropy-loss-fusion
  --cross-entropy-fusion-impl --cuda-graph-impl)
# Megatron-Bridge v0.6.0 ConfigContainer fields (training/config.py: train, model, optimizer, ddp,
# checkpoint, dataset, comm_overlap, mixed_precision) and the Megatron-Core 0.15 dataclasses behind
# model.* (model_parallel_config.py, transformer_config.py incl. MLATransformerConfig,
# models/gpt_provider.py) and ddp.* (distributed_data_parallel_config.py)
NEMO=(model.num_layers model.hidden_size model.ffn_hidden_size model.num_attention_heads
  model.num_query_groups model.kv_channels model.q_lora_rank model.kv_lora_rank model.qk_head_dim
  model.qk_pos_emb_head_dim model.v_head_dim model.num_moe_experts model.moe_router_topk
  model.moe_ffn_hidden_size model.moe_shared_expert_intermediate_size model.moe_layer_freq
  model.moe_token_dispatcher_type model.moe_grouped_gemm model.moe_permute_fusion model.moe_router_fusion
  model.cuda_graph_impl model.cuda_graph_scope
  model.overlap_moe_expert_parallel_comm model.attention_backend
  model.tensor_model_parallel_size model.sequence_parallel comm_overlap.tp_comm_overlap
  model.pipeline_model_parallel_size model.virtual_pipeline_model_parallel_size
  model.microbatch_group_size_per_vp_stage
  model.num_layers_in_first_pipeline_stage model.num_layers_in_last_pipeline_stage
  model.account_for_embedding_in_pipeline_split model.account_for_loss_in_pipeline_split
  model.pipeline_model_parallel_layout model.context_parallel_size model.cp_comm_type
  model.expert_model_parallel_size model.expert_tensor_parallel_size ddp.use_distributed_optimizer
  optimizer.use_distributed_optimizer ddp.use_megatron_fsdp ddp.data_parallel_sharding_strategy
  model.gradient_accumulation_fusion checkpoint.ckpt_format ddp.overlap_grad_reduce
  ddp.overlap_param_gather ddp.bucket_size model.recompute_granularity model.recompute_method
  model.recompute_num_layers train.micro_batch_size train.global_batch_size dataset.seq_length
  model.seq_length mixed_precision ddp.grad_reduce_in_fp32 model.moe_enable_deepep
  model.moe_router_num_groups model.moe_router_group_topk model.moe_expert_capacity_factor
  model.moe_pad_expert_input_to_capacity model.mtp_num_layers model.recompute_modules
  optimizer.use_precision_aware_optimizer optimizer.exp_avg_dtype optimizer.exp_avg_sq_dtype
  model.cross_entropy_loss_fusion model.cross_entropy_fusion_impl)
# Megatron-DeepSpeed (microsoft) megatron/arguments.py; --deepspeed and --deepspeed_config from
# DeepSpeed's deepspeed/__init__.py add_config_arguments
MDS=(--num-layers --hidden-size --ffn-hidden-size --num-attention-heads --num-key-value-heads
  --kv-channels --max-position-embeddings --use-rotary-position-embeddings
  --rotary-position-embeddings-theta --rotary-percent --no-position-embedding --normalization
  --layernorm-epsilon --swiglu --squared-relu --disable-bias-linear --untie-embeddings-and-output-weights
  --hidden-dropout --attention-dropout --make-vocab-size-divisible-by --use-flash-attn-v2
  --tensor-model-parallel-size --pipeline-model-parallel-size --sequence-parallel
  --deepspeed-activation-checkpointing --recompute-granularity --recompute-method --recompute-num-layers
  --micro-batch-size --global-batch-size --seq-length --bf16 --fp16 --zero-stage --deepspeed
  --deepspeed_config)
# DeepSpeed docs/_pages/config-json.md
DSJSON=(train_batch_size train_micro_batch_size_per_gpu gradient_accumulation_steps zero_optimization
  stage bf16 fp16 enabled data_types grad_accum_dtype)
# torchtitan v0.2.2 torchtitan/config/job_config.py: section.field
TT=(model.name model.flavor training.local_batch_size training.global_batch_size training.seq_len
  training.dtype training.mixed_precision_param training.mixed_precision_reduce
  parallelism.data_parallel_replicate_degree parallelism.data_parallel_shard_degree
  parallelism.tensor_parallel_degree parallelism.pipeline_parallel_degree
  parallelism.context_parallel_degree parallelism.expert_parallel_degree
  parallelism.expert_tensor_parallel_degree parallelism.expert_parallel_comm_backend
  parallelism.context_parallel_rotate_method
  parallelism.pipeline_parallel_schedule parallelism.pipeline_parallel_microbatch_size
  parallelism.pipeline_parallel_layers_per_stage parallelism.pipeline_parallel_first_stage_less_layers
  parallelism.pipeline_parallel_last_stage_less_layers parallelism.module_fqns_per_model_part
  activation_checkpoint.mode activation_checkpoint.selective_ac_option compile.enable)

# The flags of a sourced bash array (words starting with --).
check_flags() {
  local arr=$1; shift
  bash -n "$STDOUT" || { echo "$target: not valid bash"; exit 1; }
  local words
  words=$(cd "$scratch" && bash -c 'source "$1" && printf "%s\n" "${'"$arr"'[@]}"' _ "$STDOUT")
  [ -n "$words" ] || { echo "$target: $arr is empty"; exit 1; }
  while IFS= read -r w; do
    case $w in --*) member "$w" "$@" || unknown "$w" ;; esac
  done <<<"$words"
}

case $target in
megatron) check_flags MEGATRON_ARGS "${MLM[@]}" ;;
deepspeed)
  check_flags DEEPSPEED_ARGS "${MDS[@]}"
  [ -f "$scratch/ds_config.json" ] || { echo "deepspeed: ds_config.json not written"; exit 1; }
  if command -v python3 >/dev/null; then python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$scratch/ds_config.json"; fi
  for k in $(grep -o '"[a-z_0-9]*":' "$scratch/ds_config.json" | tr -d '":'); do member "$k" "${DSJSON[@]}" || unknown "$k"; done
  ;;
nemo)
  bash -n "$STDOUT" || { echo "nemo: not valid bash"; exit 1; }
  words=$(cd "$scratch" && bash -c 'source "$1" && printf "%s\n" "${NEMO_OVERRIDES[@]}"' _ "$STDOUT")
  while IFS= read -r w; do member "${w%%=*}" "${NEMO[@]}" || unknown "${w%%=*}"; done <<<"$words"
  ;;
torchtitan)
  if command -v python3 >/dev/null && python3 -c 'import tomllib' 2>/dev/null; then
    python3 -c 'import tomllib,sys; tomllib.load(open(sys.argv[1], "rb"))' "$STDOUT"
  fi
  for k in $(awk '/^\[/ {s = substr($0, 2, length - 2)} /^[a-z_]+ = / {print s "." $1}' "$STDOUT"); do
    member "$k" "${TT[@]}" || unknown "$k"
  done
  ;;
*) echo "check_emit.sh: unknown target $target"; exit 1 ;;
esac
exit $bad
