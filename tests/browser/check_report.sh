#!/usr/bin/env bash
# Render one HTML report in headless Chromium at two window widths (1280 and
# 1920 px; TS_BROWSER_WIDTHS overrides) and check it at each:
#   1. the page loads without console errors (Chromium's stderr log and a
#      window.onerror hook injected into a copy of the page);
#   2. every expected SVG exists, with a rendered size and a bounding box of
#      its content that are not degenerate (>= 300 x 40 px), and has shapes;
#      every expected element (an argument "#id") is rendered with a size;
#   3. nothing overflows the window sideways:
#      document.documentElement.scrollWidth <= window.innerWidth, and
#      innerWidth is the width asked for;
#   4. no two labels of one kind overlap in an SVG (getBoundingClientRect of
#      <text> elements of class plan-label, xtick, ytick or stage-label, each class
#      against itself); the scatter has plan labels, the timeline ticks;
#   5. the screenshot is not blank (png_stats: distinct colours >= 8 and at
#      least 2% of the pixels differ from the background);
#   6. the file references nothing on the network and has no script.
# usage: check_report.sh CHROMIUM PNG_STATS REPORT.html (SVG_ID | '#'ELEMENT_ID)...
# Keeps the PNGs (NAME-WIDTH.png) in $TS_BROWSER_KEEP when set.
set -u
chromium=$1 png_stats=$2 report=$3
shift 3
name=$(basename "$report" .html)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "[browser:$name] FAIL: $*"; exit 1; }
[ -s "$report" ] || fail "report $report missing or empty"

# 6. self-contained: the only URL allowed is the SVG namespace.
urls=$(grep -oE '(https?|ftp)://[^" )]*' "$report" | grep -v '^http://www.w3.org/2000/svg$' || true)
[ -z "$urls" ] || fail "report references the network: $urls"
grep -qiE '<(script|link|img|iframe)[ >]' "$report" && fail "report has script/link/img/iframe elements"

# A copy with the measuring script appended (the report itself has no script).
# It writes one line per finding into <pre id="ts-probe">, which --dump-dom prints:
#   svg ID W H BBOX_W BBOX_H SHAPES | el ID W H | width INNER SCROLL
#   labels SVG CLASS N | overlap SVG CLASS "A" "B" | errors N
probe='<script>(function(){var o=[];
function R(x){return Math.round(x)}
document.querySelectorAll("svg").forEach(function(s){
 var r=s.getBoundingClientRect(),b=s.getBBox();
 o.push("svg "+(s.id||"?")+" "+R(r.width)+" "+R(r.height)+" "+R(b.width)+" "+R(b.height)+" "+s.querySelectorAll("rect,circle,line,path").length);
 ["plan-label","xtick","ytick","stage-label"].forEach(function(c){
  var t=Array.prototype.slice.call(s.querySelectorAll("text."+c)),q=t.map(function(e){return e.getBoundingClientRect()});
  if(t.length)o.push("labels "+(s.id||"?")+" "+c+" "+t.length);
  for(var i=0;i<q.length;i++)for(var j=i+1;j<q.length;j++){
   var w=Math.min(q[i].right,q[j].right)-Math.max(q[i].left,q[j].left),h=Math.min(q[i].bottom,q[j].bottom)-Math.max(q[i].top,q[j].top);
   if(w>0.5&&h>0.5)o.push("overlap "+(s.id||"?")+" "+c+" \""+t[i].textContent+"\" \""+t[j].textContent+"\"");}});});
document.querySelectorAll("[id]").forEach(function(e){if(e.id!=="ts-probe"){var r=e.getBoundingClientRect();o.push("el "+e.id+" "+R(r.width)+" "+R(r.height));}});
o.push("width "+window.innerWidth+" "+document.documentElement.scrollWidth);
o.push("errors "+(window.__tsErrors||[]).length);
var p=document.createElement("pre");p.id="ts-probe";p.textContent=o.join("\n");document.body.appendChild(p);})();</script>'
hook='<script>window.__tsErrors=[];window.addEventListener("error",function(e){window.__tsErrors.push(String(e.message))});</script>'
awk -v hook="$hook" '{print} /<head>/ && !done {print hook; done=1}' "$report" >"$work/page.html"
printf '%s\n' "$probe" >>"$work/page.html"

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --disable-dev-shm-usage --hide-scrollbars
       --enable-logging=stderr --v=0)
run() { timeout 120 "$chromium" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$work")" "$@"; }

check_width() {
  local W=$1 tag="$name@$1"
  shift
  run --window-size="$W,1000" --dump-dom "file://$work/page.html" >"$work/dom.html" 2>"$work/dom.log"
  run --window-size="$W,1000" --screenshot="$work/shot.png" "file://$report" >/dev/null 2>"$work/shot.log"

  # 1. console errors
  if grep -hE 'Uncaught|ERROR:CONSOLE|CONSOLE\([0-9]+\).*[Ee]rror' "$work/dom.log" "$work/shot.log"; then
    fail "$W px: console errors while loading the page"
  fi
  local out
  out=$(sed -n '/<pre id="ts-probe">/,/<\/pre>/p' "$work/dom.html" |
        sed -e 's/.*<pre id="ts-probe">//' -e 's/<\/pre>.*//' -e 's/&quot;/"/g' -e 's/&amp;/\&/g')
  [ -n "$out" ] || { tail -5 "$work/dom.log"; fail "$W px: the page did not load (no probe output in --dump-dom)"; }
  echo "$out" | grep -q '^errors 0$' || fail "$W px: script errors on the page: $out"

  # 2. expected SVGs with sensible sizes, expected elements rendered
  local id line w h bw bh shapes
  for id in "$@"; do
    if [ "${id#\#}" != "$id" ]; then
      line=$(echo "$out" | grep "^el ${id#\#} " | head -1)
      [ -n "$line" ] || fail "$W px: no element id=\"${id#\#}\""
      read -r _ _ w h <<<"$line"
      { [ "$w" -gt 0 ] && [ "$h" -gt 0 ]; } || fail "$W px: element ${id#\#} is not visible (${w}x${h})"
      echo "[browser:$tag] #${id#\#} ${w}x${h}"
      continue
    fi
    line=$(echo "$out" | grep "^svg $id " | head -1)
    [ -n "$line" ] || fail "$W px: no <svg id=\"$id\"> rendered"
    read -r _ _ w h bw bh shapes <<<"$line"
    { [ "$w" -ge 300 ] && [ "$h" -ge 40 ] && [ "$bw" -ge 300 ] && [ "$bh" -ge 40 ] && [ "$shapes" -ge 3 ]; } ||
      fail "$W px: svg $id has a degenerate size: ${w}x${h}, content ${bw}x${bh}, $shapes shapes"
    echo "[browser:$tag] svg $id ${w}x${h}, content ${bw}x${bh}, $shapes shapes"
  done

  # 3. no horizontal overflow
  local inner scroll
  read -r _ inner scroll <<<"$(echo "$out" | grep '^width ')"
  [ "$inner" = "$W" ] || fail "$W px: the window is $inner px wide, not $W"
  [ "$scroll" -le "$W" ] || fail "$W px: the page is $scroll px wide, it overflows the $W px window"
  echo "[browser:$tag] page ${scroll} px wide in a ${inner} px window"

  # 4. labels: none overlap; the scatter has plan labels, the timeline ticks
  if echo "$out" | grep '^overlap '; then fail "$W px: overlapping labels (above)"; fi
  for id in "$@"; do
    case $id in
      scatter) echo "$out" | grep -q '^labels scatter plan-label [1-9]' || fail "$W px: the scatter has no plan labels" ;;
      timeline) echo "$out" | grep -qE '^labels timeline xtick ([2-9]|[1-9][0-9]+)$' || fail "$W px: the timeline has no tick labels" ;;
    esac
  done
  echo "$out" | grep '^labels ' | sed "s/^/[browser:$tag] /"

  # 5. not blank
  [ -s "$work/shot.png" ] || { tail -5 "$work/shot.log"; fail "$W px: no screenshot written"; }
  local pw ph colours permille
  read -r pw ph colours permille < <("$png_stats" "$work/shot.png") || fail "$W px: cannot read the screenshot"
  echo "[browser:$tag] screenshot ${pw}x${ph}, $colours colours, ${permille}/1000 non-background pixels"
  [ "$colours" -ge 8 ] && [ "$permille" -ge 20 ] || fail "$W px: the screenshot looks blank"
  if [ -n "${TS_BROWSER_KEEP:-}" ]; then mkdir -p "$TS_BROWSER_KEEP" && cp "$work/shot.png" "$TS_BROWSER_KEEP/$name-$W.png"; fi
}

for W in ${TS_BROWSER_WIDTHS:-1280 1920}; do check_width "$W" "$@"; done
echo "[browser:$name] ok"
