#!/usr/bin/env bash
# A user op's gradient on the GPU (run through bench/device/h200.sh or by hand from the repository
# root): softplus and its gradient conform on this device's profile (the gradient's WGSL against
# its reference, and the grad-check of its reference against finite differences of the forward);
# a gradient that is wrong in its WGSL and reference alike fails the grad-check only (exit 4); the
# MLP trained through the op gives on the GPU the losses it gives on the CPU reference.
set -uo pipefail
S=${SCELLIS:-dist/scellis}
T=$(mktemp -d)
DOC=examples/user_ops/softplus_mlp.json
for tier in prod debug; do
  echo "## conform softplus (forward, gradient WGSL, grad-check), --tier=$tier"
  "$S" conform --doc=$DOC --ops=softplus --tier=$tier; echo "exit $?"
done
python3 - "$DOC" > "$T/wrong.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = d["ops"]["softplus"]["gradient"]["x"]
g["reference"]["nodes"][2]["op"] = "exp"
g["wgsl"] = g["wgsl"].replace("/ (1.0 + exp(-x_at(index)))", "* exp(x_at(index))")
print(json.dumps(d))
PY
echo "## a gradient wrong in WGSL and reference alike: the grad-check fails (exit 4)"
"$S" conform --doc="$T/wrong.json" --ops=softplus --tier=prod; echo "exit $?"
for backend in webgpu cpu; do
  echo "## train through the op, 20 steps, --backend=$backend"
  "$S" run $DOC --steps 20 --backend=$backend --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["backend"], r["executor"], "user ops:", (r.get("receipts") or {}).get("user_ops"),
      "loss after 20 steps:", r["outputs"]["loss"]["data"])
'
done
