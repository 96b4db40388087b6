#!/usr/bin/env python3
"""oci_fixture.py — writes the container images test_images.c imports: OCI image layouts
(directories, as the OCI spec and skopeo's oci: transport have them) built from the busybox
rootfs tarball plus layers made here, and oci-archive tarballs of such layouts.

Usage: oci_fixture.py BUSYBOX_TAR OUT_DIR SCENARIO
  layers      5 layers: whiteout, opaque dir, hardlinks, symlink swap, removed and
              re-added file; config with Env, WorkingDir, User (by name), Cmd, Labels,
              ExposedPorts. Writes OUT_DIR as a layout.
  sibling     shares layers 1-2 of `layers`, then its own: a layout.
  multi       an index of linux/arm64 and linux/amd64 manifests: a layout.
  armonly     an index of linux/arm64 only: a layout.
  baddigest   `layers` with layer 3's bytes changed after its digest was taken.
  truncated   `layers` with layer 2's blob cut short.
  escape | whdotdot | crosslink   one hostile layer over busybox (`../x`, `.wh...`,
              a hardlink to a file of the layer below).
  flat1 | flat10  the same tree as 1 layer or as 10 (the create-time bench).
  big         busybox and 4 layers of 25 MB of incompressible bytes (~100 MB, the pull
              bench: make bench, section images).
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

BB, OUT, SCEN = sys.argv[1], sys.argv[2], sys.argv[3]


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def entry(name, kind="file", data=b"", mode=0o644, uid=0, gid=0, link=""):
    return dict(name=name, kind=kind, data=data, mode=mode, uid=uid, gid=gid, link=link)


def make_tar(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for e in entries:
            ti = tarfile.TarInfo(e["name"])
            ti.mode, ti.uid, ti.gid, ti.mtime = e["mode"], e["uid"], e["gid"], 0
            data = None
            if e["kind"] == "dir":
                ti.type = tarfile.DIRTYPE
                ti.mode = e["mode"] if e["mode"] != 0o644 else 0o755
            elif e["kind"] == "symlink":
                ti.type, ti.linkname = tarfile.SYMTYPE, e["link"]
            elif e["kind"] == "hardlink":
                ti.type, ti.linkname = tarfile.LNKTYPE, e["link"]
            else:
                ti.size = len(e["data"])
                data = io.BytesIO(e["data"])
            t.addfile(ti, data)
    return buf.getvalue()


def busybox_layer():
    with open(BB, "rb") as f:
        return f.read()


class Layout:
    def __init__(self, out):
        self.out = out
        os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
        with open(os.path.join(out, "oci-layout"), "w") as f:
            json.dump({"imageLayoutVersion": "1.0.0"}, f)

    def blob(self, data, media):
        d = sha(data)
        with open(os.path.join(self.out, "blobs", "sha256", d[7:]), "wb") as f:
            f.write(data)
        return {"mediaType": media, "digest": d, "size": len(data)}

    def image(self, tars, config_extra, arch="amd64", level=9):
        layers, diff_ids = [], []
        for t in tars:
            diff_ids.append(sha(t))
            gz = gzip.compress(t, compresslevel=level, mtime=0)
            layers.append(self.blob(gz, "application/vnd.oci.image.layer.v1.tar+gzip"))
        cfg = {"architecture": arch, "os": "linux", "config": config_extra,
               "rootfs": {"type": "layers", "diff_ids": diff_ids}}
        c = self.blob(json.dumps(cfg).encode(), "application/vnd.oci.image.config.v1+json")
        m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
             "config": c, "layers": layers}
        return self.blob(json.dumps(m).encode(), "application/vnd.oci.image.manifest.v1+json")

    def index(self, manifests):
        with open(os.path.join(self.out, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2,
                       "mediaType": "application/vnd.oci.image.index.v1+json",
                       "manifests": manifests}, f)


def tagged(desc, platform=None):
    d = dict(desc)
    d["annotations"] = {"org.opencontainers.image.ref.name": "latest"}
    if platform:
        d["platform"] = {"os": "linux", "architecture": platform}
    return d


PASSWD = (b"root:x:0:0:root:/root:/bin/sh\napp:x:1234:2345:app:/home/app:/bin/sh\n"
          b"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
GROUP = b"root:x:0:\napp:x:2345:\nnogroup:x:65534:\n"


def layer2():
    return make_tar([
        entry("etc", "dir"), entry("etc/passwd", data=PASSWD), entry("etc/group", data=GROUP),
        entry("home", "dir"), entry("home/app", "dir", mode=0o750, uid=1234, gid=2345),
        entry("data", "dir", mode=0o755, uid=1234, gid=2345),
        entry("data/keep", data=b"keep\n"), entry("data/gone", data=b"gone\n"),
        entry("data/readd", data=b"v1\n"),
        entry("opq", "dir"), entry("opq/a", data=b"a\n"), entry("opq/b", data=b"b\n"),
        entry("swap", "dir"), entry("swap/inner", data=b"inner\n"),
        entry("hl1", data=b"linked\n"), entry("hl2", "hardlink", link="hl1"),
    ])


def upper_layers():
    l3 = make_tar([
        entry("data", "dir", mode=0o755, uid=1234, gid=2345),
        entry("data/.wh.gone"), entry("data/.wh.readd"),
        entry("opq", "dir"), entry("opq/.wh..wh..opq"), entry("opq/c", data=b"c\n"),
        entry("swap", "symlink", link="/etc"),
    ])
    l4 = make_tar([
        entry("data", "dir", mode=0o755, uid=1234, gid=2345),
        entry("data/readd", data=b"v2\n", uid=1234, gid=2345),
        entry("swap", "dir"), entry("swap/x", data=b"not in /etc\n"),
    ])
    l5 = make_tar([entry("data", "dir", mode=0o755, uid=1234, gid=2345),
                   entry("data/hl3", data=b"top\n"), entry("data/hl4", "hardlink",
                                                          link="data/hl3")])
    return [l3, l4, l5]


CONFIG = {"Env": ["PATH=/bin:/sbin:/usr/bin", "GREETING=hello from the image"],
          "WorkingDir": "/data", "User": "app",
          "Cmd": ["sh", "-c", "echo \"$GREETING in $(pwd) as $(id -u):$(id -g)\""],
          "Labels": {"org.example.kind": "fixture"},
          "ExposedPorts": {"8080/tcp": {}}}


def main():
    lo = Layout(OUT)
    bb = busybox_layer()
    if SCEN in ("layers", "baddigest", "truncated"):
        tars = [bb, layer2()] + upper_layers()
        m = lo.image(tars, CONFIG)
        lo.index([tagged(m)])
        blobs = os.path.join(OUT, "blobs", "sha256")
        man = json.load(open(os.path.join(blobs, m["digest"][7:])))
        if SCEN == "baddigest":
            p = os.path.join(blobs, man["layers"][2]["digest"][7:])
            data = gzip.compress(make_tar([entry("evil", data=b"swapped\n")]), mtime=0)
            data = data + b"\0" * max(0, man["layers"][2]["size"] - len(data))
            with open(p, "wb") as f:
                f.write(data[:man["layers"][2]["size"]])
        if SCEN == "truncated":
            p = os.path.join(blobs, man["layers"][1]["digest"][7:])
            with open(p, "r+b") as f:
                f.truncate(man["layers"][1]["size"] // 2)
    elif SCEN == "sibling":
        own = make_tar([entry("sibling", data=b"mine\n")])
        m = lo.image([bb, layer2(), own], {"Cmd": ["cat", "/sibling"]})
        lo.index([tagged(m)])
    elif SCEN in ("multi", "armonly"):
        arm = lo.image([bb, make_tar([entry("arch", data=b"arm64\n")])], {"Cmd": ["cat", "/arch"]},
                       arch="arm64")
        entries = [dict(arm, platform={"os": "linux", "architecture": "arm64"})]
        if SCEN == "multi":
            amd = lo.image([bb, make_tar([entry("arch", data=b"amd64\n")])],
                           {"Cmd": ["cat", "/arch"]})
            entries.append(dict(amd, platform={"os": "linux", "architecture": "amd64"}))
        idx = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
               "manifests": entries}
        d = lo.blob(json.dumps(idx).encode(), "application/vnd.oci.image.index.v1+json")
        lo.index([tagged(d)])
    elif SCEN in ("escape", "whdotdot", "crosslink"):
        bad = {"escape": [entry("../escaped", data=b"x\n")],
               "whdotdot": [entry("etc", "dir"), entry("etc/.wh...")],
               "crosslink": [entry("etc", "dir"), entry("etc/linked", "hardlink",
                                                        link="etc/passwd")]}[SCEN]
        m = lo.image([bb, make_tar(bad)], {})
        lo.index([tagged(m)])
    elif SCEN in ("flat1", "flat10"):
        files = [entry("tree", "dir")] + [entry("tree/f%03d" % i, data=(b"%d\n" % i) * 64)
                                          for i in range(200)]
        parts = [bb] + [make_tar([entry("tree", "dir")] + files[1 + k * 20:1 + (k + 1) * 20])
                        for k in range(10)]
        tars = parts if SCEN == "flat10" else [make_flat(parts)]
        m = lo.image(tars, {"Cmd": ["true"]})
        lo.index([tagged(m)])
    elif SCEN == "big":
        import random
        rnd = random.Random(39)
        tars = [bb] + [make_tar([entry("big", "dir"),
                                 entry("big/part%d" % k, data=rnd.randbytes(25 << 20))])
                       for k in range(4)]
        m = lo.image(tars, {"Cmd": ["true"]}, level=1)
        lo.index([tagged(m)])
    else:
        sys.exit("unknown scenario " + SCEN)


def make_flat(tars):
    """The layers' entries in one tar (no whiteouts among them): the same tree."""
    seen, out = {}, []
    for t in tars:
        with tarfile.open(fileobj=io.BytesIO(t)) as tf:
            for ti in tf.getmembers():
                data = tf.extractfile(ti).read() if ti.isfile() else None
                seen[ti.name.rstrip("/").lstrip("./") or "."] = (ti, data)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for _, (ti, data) in seen.items():
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


main()
