#!/usr/bin/env bash
# Shows the CPU guard failing as a regression arrives: clones this checkout's HEAD into a temporary
# folder, adds one commit whose service busy-waits 15 µs of CPU at the start of every HTTP request
# (bench/baseline lacks it), and runs `npm run bench:guard` there. Exit 0 when the guard failed every
# scenario it measured, as it must; 1 otherwise. Takes about 8 minutes (every scenario is read twice).
#   bash bench/guard-selftest.sh            the planted commit
#   PLANT_US=0 bash bench/guard-selftest.sh  the same clone without a cost: the guard must pass
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
plant_us="${PLANT_US:-15}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone --quiet "$root" "$work/petstore"
cd "$work/petstore"
if [ "$plant_us" != 0 ]; then
  cat >src/planted-cost.ts <<TS
// A planted regression (bench/guard-selftest.sh): ${plant_us} µs of CPU at the start of every request.
import { subscribe } from 'node:diagnostics_channel'

subscribe('http.server.request.start', () => {
  const end = process.hrtime.bigint() + ${plant_us}_000n
  while (process.hrtime.bigint() < end) {}
})
TS
  # An import anywhere in a module runs before its body; src/cli.ts starts with a #! line.
  printf "import './planted-cost.js'\n" >>src/cli.ts
  git add src/planted-cost.ts src/cli.ts
  git -c user.name=guard-selftest -c user.email=guard-selftest@localhost commit --quiet -m "Plant ${plant_us} µs of CPU per request"
fi
npm ci --no-audit --no-fund >/dev/null
set +e
npm run bench:guard 2>&1 | tee "$work/guard.log"
rc=${PIPESTATUS[0]}
set -e
measured=$(grep -cE '^(sqlite|postgres)/[a-z0-9-]+: this build' "$work/guard.log" || true)
over=$(grep -cE '^  (sqlite|postgres)/[a-z0-9-]+: CPU per request' "$work/guard.log" || true)
echo "guard-selftest: ${plant_us} µs planted; the guard exited $rc, ${over} of ${measured} scenarios over their budgets"
if [ "$plant_us" = 0 ]; then [ "$rc" = 0 ] && exit 0 || exit 1; fi
[ "$rc" != 0 ] && [ "$measured" -gt 0 ] && [ "$over" = "$measured" ]
