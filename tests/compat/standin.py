#!/usr/bin/env python3
"""standin.py DEFAULT_TAR_ZST OUT — an OCI image layout (OUT/layout, tag `latest`) that
stands in for Docker Hub's python images in the compat suites, which cannot reach the hub,
PyPI or Debian's mirrors. The providers' SDKs generate Dockerfiles such as Daytona's
Image.debianSlim('3.12'):

    FROM python:3.12-slim-bookworm
    RUN apt-get update
    RUN apt-get install -y gcc gfortran build-essential
    RUN pip install --upgrade pip
    RUN python -m pip install sandlot-tiny

and every line of it must work offline, in a build sandbox with the network off:

  layer 1  the default image's rootfs, its .tar.zst used as the blob as it is (tar+zstd);
  layer 2  `python` -> python3; /etc/pip.conf with no index and a local wheel directory
           (/opt/standin/wheels: sandlot-tiny 1.0); apt's sources replaced (a whiteout of
           the default image's list) by a flat file: repository (/opt/standin/apt) holding
           empty packages named gcc, gfortran and build-essential, and sandlot-tiny.

The config is python's: root, Cmd ["python3"], PATH, LANG. The python inside is Debian
12's 3.11 whatever tag it is served under: a stand-in, not the image. Only python3 and
dpkg-deb are used; the result is reused while DEFAULT_TAR_ZST, this script and
packages_fixtures.py are unchanged (OUT/key)."""
import hashlib, io, json, os, shutil, subprocess, sys, tarfile, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from packages_fixtures import wheel_bytes  # noqa: E402  (the packages suite's wheel)

src, out = sys.argv[1], sys.argv[2]


def sha_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


key = " ".join([sha_file(src), sha_file(__file__), sha_file(sys.modules["packages_fixtures"].__file__)])
try:
    if open(os.path.join(out, "key")).read() == key:
        sys.exit(0)
except FileNotFoundError:
    pass
shutil.rmtree(out, ignore_errors=True)
layout = os.path.join(out, "layout")
blobs = os.path.join(layout, "blobs", "sha256")
os.makedirs(blobs)


def put(data, media):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, d), "wb") as f:
        f.write(data)
    return {"mediaType": media, "digest": "sha256:" + d, "size": len(data)}


def deb(tmp, name, tool=None):
    root = os.path.join(tmp, name)
    os.makedirs(os.path.join(root, "DEBIAN"))
    control = (f"Package: {name}\nVersion: 99.0\nArchitecture: all\n"
               "Maintainer: sandlot tests <tests@sandlot.invalid>\n"
               f"Description: sandlot's offline stand-in for {name}\n")
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write(control)
    if tool:
        os.makedirs(os.path.join(root, "usr", "bin"))
        p = os.path.join(root, "usr", "bin", name)
        with open(p, "w") as f:
            f.write(tool)
        os.chmod(p, 0o755)
    path = os.path.join(tmp, f"{name}_99.0_all.deb")
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, path],
                   check=True, stdout=subprocess.DEVNULL)
    data = open(path, "rb").read()
    entry = (control + f"Filename: ./{name}_99.0_all.deb\nSize: {len(data)}\n"
             f"MD5sum: {hashlib.md5(data).hexdigest()}\n"
             f"SHA256: {hashlib.sha256(data).hexdigest()}\n\n")
    return os.path.basename(path), data, entry


def layer2():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        def add(name, data=None, mode=0o644, kind=tarfile.REGTYPE, link=""):
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode, ti.mtime, ti.linkname = kind, mode, 0, link
            if data is not None:
                ti.size = len(data)
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
        for d in ("opt", "opt/standin", "opt/standin/wheels", "opt/standin/apt"):
            add(d, mode=0o755, kind=tarfile.DIRTYPE)
        add("usr/local/bin/python", kind=tarfile.SYMTYPE, link="/usr/bin/python3")
        add("etc/pip.conf", b"[global]\nno-index = true\nfind-links = /opt/standin/wheels\n"
            b"break-system-packages = true\nroot-user-action = ignore\n")
        add("opt/standin/wheels/sandlot_tiny-1.0-py3-none-any.whl", wheel_bytes())
        add("etc/apt/sources.list.d/.wh.0000sources.list", b"")
        add("etc/apt/sources.list.d/standin.list",
            b"deb [trusted=yes] file:/opt/standin/apt ./\n")
        packages = ""
        with tempfile.TemporaryDirectory() as tmp:
            for name, tool in (("gcc", None), ("gfortran", None), ("build-essential", None),
                               ("sandlot-tiny", "#!/bin/sh\necho tiny deb\n")):
                fname, data, entry = deb(tmp, name, tool)
                add("opt/standin/apt/" + fname, data)
                packages += entry
        add("opt/standin/apt/Packages", packages.encode())
    return buf.getvalue()


def main():
    # Layer 1: the .tar.zst as it is; its diff_id is the digest of the tar inside.
    with open(src, "rb") as f:
        zst = f.read()
    l1 = put(zst, "application/vnd.oci.image.layer.v1.tar+zstd")
    h = hashlib.sha256()
    with subprocess.Popen(["zstd", "-dcq", src], stdout=subprocess.PIPE) as p:
        for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
            h.update(chunk)
    if p.returncode:
        sys.exit(f"standin: zstd -dc {src} failed")
    tar2 = layer2()
    l2 = put(tar2, "application/vnd.oci.image.layer.v1.tar")
    config = {
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
                           "LANG=C.UTF-8"],
                   "Cmd": ["python3"],
                   "Labels": {"org.sandlot.standin": "python"}},
        "rootfs": {"type": "layers",
                   "diff_ids": ["sha256:" + h.hexdigest(),
                                "sha256:" + hashlib.sha256(tar2).hexdigest()]},
    }
    cfg = put(json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": cfg, "layers": [l1, l2]}
    m = put(json.dumps(manifest).encode(), "application/vnd.oci.image.manifest.v1+json")
    m["annotations"] = {"org.opencontainers.image.ref.name": "latest"}
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [m]}, f)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion": "1.0.0"}')
    with open(os.path.join(out, "key"), "w") as f:
        f.write(key)


main()
