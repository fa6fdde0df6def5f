"""Shared by the fit scripts: a scratch copy of the data folder whose device and framework files a
grid rewrites, and `shardplan validate` run on it (SHARDPLAN_DATA_DIR)."""
import argparse, contextlib, json, os, shutil, statistics, subprocess, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARDPLAN = os.path.join(ROOT, "build", "tools", "shardplan")


def shardplan_binary(doc):
    """The shardplan binary the script runs: --shardplan, else the build's; `doc` is the script's
    docstring, whose first line is its --help."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--shardplan", default=SHARDPLAN)
    return ap.parse_args().shardplan


@contextlib.contextmanager
def data_copy():
    """A copy of frameworks/, topologies/ and data/fidelity/ (models/ linked), removed after."""
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data_dir")
        os.makedirs(os.path.join(data, "data"))
        os.symlink(os.path.join(ROOT, "models"), os.path.join(data, "models"))
        for folder in ("frameworks", "topologies"):
            shutil.copytree(os.path.join(ROOT, folder), os.path.join(data, folder))
        shutil.copytree(os.path.join(ROOT, "data", "fidelity"), os.path.join(data, "data", "fidelity"))
        yield data


def device_files(data):
    """Every device description in the copy (GPU clusters of topologies/ and data/fidelity/)."""
    for folder in ("topologies", os.path.join("data", "fidelity")):
        for name in sorted(os.listdir(os.path.join(data, folder))):
            path = os.path.join(data, folder, name)
            j = json.load(open(path))
            if "device" in j and "efficiency" in j["device"] and "cpu" not in name:
                yield path, j


def set_host_us_per_kernel(data, host, frameworks=None):
    """Every framework profile of the copy (or those named) issues a kernel in `host` microseconds."""
    for name in os.listdir(os.path.join(data, "frameworks")):
        if frameworks is not None and name.removesuffix(".json") not in frameworks:
            continue
        path = os.path.join(data, "frameworks", name)
        j = json.load(open(path))
        j["host_us_per_kernel"] = host
        json.dump(j, open(path, "w"))


def set_device_efficiency(data, key, value, devices=lambda device: True):
    """device.efficiency[key] = value in every device of the copy that `devices` accepts."""
    for path, j in device_files(data):
        if devices(j["device"]):
            j["device"]["efficiency"][key] = value
            json.dump(j, open(path, "w"))


def mape_and_signed(errors):
    """MAPE and signed mean, in percent, of relative errors (predicted / measured - 1)."""
    return 100 * statistics.mean(abs(e) for e in errors), 100 * statistics.mean(errors)


def validate(shardplan, data, sets, rows=False):
    """validate's JSON figures for `sets`, or with rows=True its rows (--rows)."""
    args = [shardplan, "validate", "--format", "json"]
    for s in sets:
        args += ["--set", s]
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        if rows:
            args += ["--rows", f.name]
        out = subprocess.run(args, capture_output=True, text=True, check=True,
                             env=dict(os.environ, SHARDPLAN_DATA_DIR=data))
        return json.load(open(f.name)) if rows else json.loads(out.stdout)
