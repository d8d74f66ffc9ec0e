#!/usr/bin/env bash
# Render one HTML report in headless Chromium and check it:
#   1. the page loads without console errors (Chromium's stderr log and a
#      window.onerror hook injected into a copy of the page);
#   2. every expected SVG exists, with a rendered size and a bounding box of
#      its content that are not degenerate (>= 300 x 40 px), and has shapes;
#   3. the screenshot is not blank (png_stats: distinct colours >= 8 and at
#      least 2% of the pixels differ from the background);
#   4. the file references nothing on the network.
# usage: check_report.sh CHROMIUM PNG_STATS REPORT.html SVG_ID...
# Keeps the PNG next to a copy of the page in $TS_BROWSER_KEEP when set.
set -u
chromium=$1 png_stats=$2 report=$3
shift 3
name=$(basename "$report" .html)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "[browser:$name] FAIL: $*"; exit 1; }
[ -s "$report" ] || fail "report $report missing or empty"

# 4. self-contained: the only URL allowed is the SVG namespace.
urls=$(grep -oE '(https?|ftp)://[^" )]*' "$report" | grep -v '^http://www.w3.org/2000/svg$' || true)
[ -z "$urls" ] || fail "report references the network: $urls"
grep -qiE '<(script|link|img|iframe)[ >]' "$report" && fail "report has script/link/img/iframe elements"

# A copy with the measuring script appended (the report itself has no script).
probe='<script>(function(){var o=[];document.querySelectorAll("svg").forEach(function(s){
var r=s.getBoundingClientRect(),b=s.getBBox();
o.push("svg "+(s.id||"?")+" "+Math.round(r.width)+" "+Math.round(r.height)+" "+Math.round(b.width)+" "+Math.round(b.height)+" "+s.querySelectorAll("rect,circle,line,path").length);});
o.push("errors "+(window.__tsErrors||[]).length);
var p=document.createElement("pre");p.id="ts-probe";p.textContent=o.join("\n");document.body.appendChild(p);})();</script>'
hook='<script>window.__tsErrors=[];window.addEventListener("error",function(e){window.__tsErrors.push(String(e.message))});</script>'
awk -v hook="$hook" '{print} /<head>/ && !done {print hook; done=1}' "$report" >"$work/page.html"
printf '%s\n' "$probe" >>"$work/page.html"

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --disable-dev-shm-usage --hide-scrollbars
       --enable-logging=stderr --v=0 --window-size=1400,1000)
run() { timeout 120 "$chromium" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$work")" "$@"; }

run --dump-dom "file://$work/page.html" >"$work/dom.html" 2>"$work/dom.log"
run --screenshot="$work/shot.png" "file://$report" >/dev/null 2>"$work/shot.log"

# 1. console errors
if grep -hE 'Uncaught|ERROR:CONSOLE|CONSOLE\([0-9]+\).*[Ee]rror' "$work/dom.log" "$work/shot.log"; then
  fail "console errors while loading the page"
fi
probe_out=$(sed -n '/<pre id="ts-probe">/,/<\/pre>/p' "$work/dom.html" |
            sed -e 's/.*<pre id="ts-probe">//' -e 's/<\/pre>.*//')
[ -n "$probe_out" ] || { tail -5 "$work/dom.log"; fail "the page did not load (no probe output in --dump-dom)"; }
echo "$probe_out" | grep -q '^errors 0$' || fail "script errors on the page: $probe_out"

# 2. expected SVGs with sensible sizes
for id in "$@"; do
  line=$(echo "$probe_out" | grep "^svg $id " | head -1)
  [ -n "$line" ] || fail "no <svg id=\"$id\"> rendered"
  read -r _ _ w h bw bh shapes <<<"$line"
  { [ "$w" -ge 300 ] && [ "$h" -ge 40 ] && [ "$bw" -ge 300 ] && [ "$bh" -ge 40 ] && [ "$shapes" -ge 3 ]; } ||
    fail "svg $id has a degenerate size: ${w}x${h}, content ${bw}x${bh}, $shapes shapes"
  echo "[browser:$name] svg $id ${w}x${h}, content ${bw}x${bh}, $shapes shapes"
done

# 3. not blank
[ -s "$work/shot.png" ] || { tail -5 "$work/shot.log"; fail "no screenshot written"; }
read -r pw ph colours permille < <("$png_stats" "$work/shot.png") || fail "cannot read the screenshot"
echo "[browser:$name] screenshot ${pw}x${ph}, $colours colours, ${permille}/1000 non-background pixels"
[ "$colours" -ge 8 ] && [ "$permille" -ge 20 ] || fail "the screenshot looks blank"
if [ -n "${TS_BROWSER_KEEP:-}" ]; then mkdir -p "$TS_BROWSER_KEEP" && cp "$work/shot.png" "$TS_BROWSER_KEEP/$name.png"; fi
echo "[browser:$name] ok"
