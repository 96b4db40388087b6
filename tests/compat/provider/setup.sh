# setup.sh — sourced by run-suite.sh ($dir, $top, $root, $bin set): build sdk/typescript
# from its own committed lockfile (tsc: ESM + CJS + .d.ts into sdk/typescript/dist, not
# committed), make a tiny pure-python wheel for the packages test, and serve it with
# --pip-wheels.
sdk=$top/sdk/typescript
sdk_stamp=$sdk/node_modules/.sandlot-lock-sha
sdk_want=$(sha256sum "$sdk/package-lock.json" | cut -c1-64)
if [ "$(cat "$sdk_stamp" 2>/dev/null)" != "$sdk_want" ]; then
	(cd "$sdk" && npm ci --no-audit --no-fund --loglevel=error)
	echo "$sdk_want" >"$sdk_stamp"
fi
(cd "$sdk" && node build.mjs)

# sandlot_probe 1.0: one module whose VALUE the test reads back after pip installed it.
export SANDLOT_TEST_WHEELS=$root/wheels
mkdir -p "$SANDLOT_TEST_WHEELS"
python3 - "$SANDLOT_TEST_WHEELS" <<'PY'
import base64, hashlib, sys, zipfile
files = {
    "sandlot_probe/__init__.py": 'VALUE = "sandlot-probe-1.0"\n',
    "sandlot_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sandlot-probe\nVersion: 1.0\n",
    "sandlot_probe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: sandlot-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for name, text in files.items():
    data = text.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{name},sha256={digest},{len(data)}")
record.append("sandlot_probe-1.0.dist-info/RECORD,,")
files["sandlot_probe-1.0.dist-info/RECORD"] = "\n".join(record) + "\n"
with zipfile.ZipFile(sys.argv[1] + "/sandlot_probe-1.0-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as z:
    for name, text in files.items():
        z.writestr(name, text)
PY
SERVE_ARGS+=(--pip-wheels "$SANDLOT_TEST_WHEELS")

# npm packages (typescript sandboxes) come from the test's own registry, served from a
# network namespace at 203.0.113.1 (tests/e2e/packages_internet.sh; never a real address).
pkgsrc=$root/pkgsrc
pkgns=sl-prov-$$
sh "$top/tests/e2e/packages_internet.sh" up "$pkgsrc" "$pkgns"
suite_cleanup() { sh "$top/tests/e2e/packages_internet.sh" down "$pkgsrc" "$pkgns"; }
SERVE_ARGS+=(--npm-registry http://203.0.113.1:8080/npm/)
