#!/usr/bin/env python3
"""packages_fixtures.py OUT BASE_URL — the package sources test_packages serves from its
"internet" netns: a pip wheel directory, a static npm registry and a flat apt repository,
each holding one tiny package, built from nothing but python3 and dpkg-deb.

OUT/wheels/sandlot_tiny-1.0-py3-none-any.whl        (pip --find-links)
OUT/www/npm/sandlot-tiny                             (the packument, JSON)
OUT/www/npm/tarballs/sandlot-tiny-1.0.0.tgz
OUT/www/apt/Packages, OUT/www/apt/sandlot-tiny_1.0_all.deb   ("deb [trusted=yes] URL/apt ./")
BASE_URL is where OUT/www is served (http://203.0.113.1:8080)."""
import base64, hashlib, io, json, os, subprocess, sys, tarfile, zipfile


def wheel_bytes():
    """sandlot-tiny 1.0 as a py3-none-any wheel (also the compat stand-in's, standin.py)."""
    files = {
        "sandlot_tiny/__init__.py": b"ANSWER = 42\n",
        "sandlot_tiny-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: sandlot-tiny\nVersion: 1.0\n",
        "sandlot_tiny-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: sandlot-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={h},{len(data)}")
    record.append("sandlot_tiny-1.0.dist-info/RECORD,,")
    files["sandlot_tiny-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def wheel():
    d = os.path.join(out, "wheels")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "sandlot_tiny-1.0-py3-none-any.whl"), "wb") as f:
        f.write(wheel_bytes())


def npm():
    d = os.path.join(out, "www", "npm")
    os.makedirs(os.path.join(d, "tarballs"), exist_ok=True)
    pj = {"name": "sandlot-tiny", "version": "1.0.0", "main": "index.js",
          "bin": {"sandlot-tiny": "cli.js"}}
    files = {"package/package.json": json.dumps(pj).encode(),
             "package/index.js": b"module.exports = { answer: 42 };\n",
             "package/cli.js": b"#!/usr/bin/env node\nconsole.log('tiny ' + require('./index.js').answer);\n"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(data), 0o755 if name.endswith("cli.js") else 0o644
            t.addfile(ti, io.BytesIO(data))
    tgz = buf.getvalue()
    with open(os.path.join(d, "tarballs", "sandlot-tiny-1.0.0.tgz"), "wb") as f:
        f.write(tgz)
    ver = dict(pj, dist={
        "tarball": f"{base}/npm/tarballs/sandlot-tiny-1.0.0.tgz",
        "shasum": hashlib.sha1(tgz).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()})
    doc = {"name": "sandlot-tiny", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": ver}}
    # The packument: GET /npm/sandlot-tiny, a file python's http.server serves as is.
    with open(os.path.join(d, "sandlot-tiny"), "w") as f:
        json.dump(doc, f)


def apt():
    d = os.path.join(out, "www", "apt")
    root = os.path.join(out, "debroot")
    os.makedirs(os.path.join(root, "DEBIAN"), exist_ok=True)
    os.makedirs(os.path.join(root, "usr", "bin"), exist_ok=True)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write("Package: sandlot-tiny\nVersion: 1.0\nArchitecture: all\n"
                "Maintainer: sandlot tests <tests@sandlot.invalid>\n"
                "Description: a tiny package for sandlot's tests\n")
    tool = os.path.join(root, "usr", "bin", "sandlot-tiny")
    with open(tool, "w") as f:
        f.write("#!/bin/sh\necho tiny deb\n")
    os.chmod(tool, 0o755)
    deb = os.path.join(d, "sandlot-tiny_1.0_all.deb")
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, deb],
                   check=True, stdout=subprocess.DEVNULL)
    data = open(deb, "rb").read()
    control = open(os.path.join(root, "DEBIAN", "control")).read()
    with open(os.path.join(d, "Packages"), "w") as f:
        f.write(control + f"Filename: ./sandlot-tiny_1.0_all.deb\nSize: {len(data)}\n"
                f"MD5sum: {hashlib.md5(data).hexdigest()}\n"
                f"SHA256: {hashlib.sha256(data).hexdigest()}\n\n")


if __name__ == "__main__":
    out, base = sys.argv[1], sys.argv[2].rstrip("/")
    wheel()
    npm()
    apt()
