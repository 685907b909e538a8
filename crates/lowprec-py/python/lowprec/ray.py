"""lowprec's report and quantization of a checkpoint as Ray tasks: beyond one machine.

``pip install 'lowprec[ray]'`` (Ray itself is optional). The work is planned from the
checkpoint's headers (the index and the shards' headers; no tensor is read to plan it) as
one task per tensor (``per="tensor"``, the report's default) or per shard
(``per="shard"``, quantization's only choice); each task reads only its own tensors, on
whatever node runs it, so **every node must see the checkpoint at the same path** (a shared
or replicated filesystem). The tasks return their rows with the unrounded, mergeable error
statistics (``lowprec._lowprec.report_partial``), and the driver puts them back in
checkpoint order and merges them exactly (``report_finish``): the rows and the totals equal
the single-process :func:`lowprec.report` bit for bit, whatever the number of workers, the
order in which tasks finish, or retries.

A worker that dies mid-task (killed, out of memory, its node lost) is retried by Ray
(``max_retries``, 3 by default); a quantization task writes its shard to a temporary file
renamed only when complete, so a killed task leaves no partial shard, and the driver removes
the temporary files of killed writers once every task is done.

On a real cluster::

    # on the head node, then on every worker node with the head's address
    ray start --head --port=6379
    ray start --address=HEAD_IP:6379
    # anywhere with the checkpoint at the same path
    python -m lowprec.ray report /data/llama-70b -s mxfp4 -s nvfp4 --address HEAD_IP:6379
    python -m lowprec.ray report /data/llama-70b -s mxfp4 --dry-run --workers 64

``--dry-run`` prints the plan without Ray: the tasks, their bytes, and the time each is
estimated to take from per-scheme rates measured here on a synthetic tensor (compute only;
reading the bytes is not included), with the wall time for the given number of workers
(tasks placed longest first on the least-loaded worker).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from . import _lowprec, _schemes_list

__all__ = ["Task", "Plan", "plan", "measure_rates", "report", "quantize", "main"]


def _ray():
    try:
        import ray
    except ImportError:
        raise ImportError("lowprec.ray needs Ray: pip install 'lowprec[ray]' "
                          "(or pip install ray)") from None
    return ray


@dataclass
class Task:
    """One unit of work: the tensors it reports (or the shard it quantizes)."""

    #: the tensor names (checkpoint order)
    names: list
    #: the shard file that holds them
    shard: str
    #: bytes stored
    bytes: int
    #: elements
    elements: int
    #: estimated seconds of compute (0 when no rates were given)
    seconds: float = 0.0


@dataclass
class Plan:
    """The tasks of a run and, for `workers` workers, its estimated wall time."""

    path: str
    per: str
    schemes: list
    workers: int
    tasks: list = field(default_factory=list)
    #: estimated wall time (seconds) with `workers` workers
    seconds: float = 0.0

    def text(self):
        """The plan as printed by ``--dry-run``."""
        total = sum(t.bytes for t in self.tasks)
        lines = [f"{len(self.tasks)} tasks (one per {self.per}) over {self.workers} workers, "
                 f"{total / 2**20:.1f} MiB; estimated wall time {self.seconds:.2f} s "
                 f"(compute only, from rates measured here)",
                 f"{'task':>5}  {'MiB':>9}  {'est. s':>8}  tensors"]
        for i, t in enumerate(self.tasks):
            what = t.names[0] if len(t.names) == 1 else f"{len(t.names)} tensors of {os.path.basename(t.shard)}"
            lines.append(f"{i:>5}  {t.bytes / 2**20:>9.3f}  {t.seconds:>8.3f}  {what}")
        return "\n".join(lines)


def measure_rates(schemes=None, elements=1 << 20):
    """Elements per second of the report through each scheme (``{scheme: rate}``), measured
    on a synthetic normal tensor of `elements` elements in this process."""
    schemes = _schemes_list(schemes) or [r["scheme"] for r in _lowprec.report(
        [("probe", np.zeros((1, 256), np.float32))], None, None, False)]
    cols = 4096
    x = np.random.default_rng(0).standard_normal((max(1, elements // cols), cols)).astype(np.float32)
    rates = {}
    for s in schemes:
        t0 = time.perf_counter()
        _lowprec.report([("probe", x)], None, [s], False)
        rates[s] = x.size / max(time.perf_counter() - t0, 1e-9)
    return rates


def _makespan(seconds, workers):
    """The wall time of tasks of these durations on `workers` workers, longest first onto
    the least-loaded worker."""
    load = [0.0] * max(1, workers)
    for s in sorted(seconds, reverse=True):
        i = load.index(min(load))
        load[i] += s
    return max(load)


def plan(path, schemes=None, per="tensor", include=(), exclude=(), workers=None, rates=None):
    """The tasks of a report (``per="tensor"`` or ``"shard"``) of the checkpoint `path`,
    from its headers only; with `rates` (``{scheme: elements/s}``, see
    :func:`measure_rates`) each task's estimated seconds and the wall time on `workers`
    workers (default: this machine's CPUs)."""
    if per not in ("tensor", "shard"):
        raise ValueError(f"per must be 'tensor' or 'shard', not {per!r}")
    path = os.path.abspath(os.fspath(path))
    schemes = _schemes_list(schemes)
    entries = [e for e in _lowprec.checkpoint_tensors(path, [str(g) for g in include],
                                                       [str(g) for g in exclude]) if e[5]]
    if not entries:
        raise ValueError(f"no floating tensors in {path}"
                         + (" that include / exclude keep" if include or exclude else ""))
    tasks = []
    for name, shard, _dtype, shape, nbytes, _ in entries:
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if per == "shard" and tasks and tasks[-1].shard == os.fspath(shard):
            t = tasks[-1]
            t.names.append(name)
            t.bytes += nbytes
            t.elements += n
        else:
            tasks.append(Task([name], os.fspath(shard), nbytes, n))
    workers = int(workers or os.cpu_count() or 1)
    if rates:
        per_element = sum(1.0 / r for r in rates.values())
        for t in tasks:
            t.seconds = t.elements * per_element
    p = Plan(path, per, schemes or [], workers, tasks)
    p.seconds = _makespan([t.seconds for t in tasks], workers)
    return p


def _die_if(fault):
    """Testing hook: when the file `fault` exists, remove it and kill this worker
    process (SIGKILL, as the kernel's OOM killer would): Ray retries the task."""
    if fault:
        try:
            os.remove(fault)
        except FileNotFoundError:
            return
        os.kill(os.getpid(), signal.SIGKILL)


def _die_while_writing(fault, out_dir):
    """Testing hook: when the file `fault` exists, kill this worker once a temporary
    output file appears in `out_dir` (mid-write), or after 2 s."""
    if not fault:
        return
    try:
        os.remove(fault)
    except FileNotFoundError:
        return

    def watch():
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            if any(n.startswith(".lowprec-") and n.endswith(".tmp") for n in os.listdir(out_dir)):
                break
            time.sleep(0.0005)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()


def _report_task(path, names, schemes, include, exclude, rotated, fault):
    _die_if(fault)
    return _lowprec.report_partial(path, names, schemes, include, exclude, rotated)


def _quantize_task(shard, scheme, out_dir, fault):
    _die_while_writing(fault, out_dir)
    written = _lowprec.quantize_shard(shard, scheme, out_dir)
    if fault:
        time.sleep(3.0)  # the watcher kills this worker before it returns
    return written


def _check_schemes(schemes):
    """Refuse an unknown scheme here, in one line, before any task is sent."""
    _lowprec.report([("probe", np.zeros((1, 256), np.float32))], None, schemes, False)


def _init(ray, address):
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)


def report(path, schemes=None, totals=True, per="tensor", include=(), exclude=(),
           basis="model", address=None, max_retries=3, num_cpus=1, dry_run=False,
           workers=None, _fault=None):
    """:func:`lowprec.report` of the checkpoint `path` as Ray tasks (one per tensor or per
    shard), the same rows and totals bit for bit. Connects to the cluster at `address`
    (``"auto"``, ``"HOST:6379"``; None starts a local one) unless Ray is already
    initialised. `num_cpus` per task. ``dry_run=True`` returns the :class:`Plan` (with
    estimated times for `workers` workers) without running anything."""
    schemes = _schemes_list(schemes)
    if basis not in ("model", "rotated"):
        raise ValueError(f"basis must be 'model' or 'rotated', not {basis!r}")
    if dry_run:
        return plan(path, schemes, per, include, exclude, workers, measure_rates(schemes))
    p = plan(path, schemes, per, include, exclude, workers)
    _check_schemes(schemes)
    ray = _ray()
    _init(ray, address)
    task = ray.remote(num_cpus=num_cpus, max_retries=max_retries)(_report_task)
    inc, exc = [str(g) for g in include], [str(g) for g in exclude]
    refs = [task.remote(p.path, t.names, schemes, inc, exc, basis == "rotated",
                        os.fspath(_fault) if _fault else None) for t in p.tasks]
    parts = ray.get(refs)
    return _lowprec.report_finish(parts, schemes, totals)


def quantize(path, scheme, output, address=None, max_retries=3, num_cpus=1, dry_run=False,
             workers=None, _fault=None):
    """:func:`lowprec.quantize_checkpoint` as Ray tasks, one per shard, each writing its
    shard atomically into the folder `output` (shards already holding `scheme` are kept);
    then the index. Returns ``(shards written, shards kept)``, or the :class:`Plan` with
    ``dry_run=True``."""
    if dry_run:
        return plan(path, [scheme], "shard", workers=workers, rates=measure_rates([scheme]))
    p = plan(path, [scheme], "shard", workers=workers)
    _check_schemes([str(scheme)])
    output = os.path.abspath(os.fspath(output))
    os.makedirs(output, exist_ok=True)
    ray = _ray()
    _init(ray, address)
    task = ray.remote(num_cpus=num_cpus, max_retries=max_retries)(_quantize_task)
    refs = [task.remote(t.shard, str(scheme), output, os.fspath(_fault) if _fault else None)
            for t in p.tasks]
    done = ray.get(refs)
    _lowprec.write_shard_index(output, [os.path.basename(t.shard) for t in p.tasks], str(scheme))
    return sum(done), len(done) - sum(done)


def _table(rows):
    out = [f"{'tensor':<40} {'scheme':<18} {'bits/el':>8} {'rel err':>10} {'SQNR dB':>8}"]
    for r in rows:
        if r["error"]:
            out.append(f"{r['tensor']:<40} {r['scheme']:<18} {r['bits_per_element']:>8.3f} n/a: {r['error']}")
        else:
            out.append(f"{r['tensor']:<40} {r['scheme']:<18} {r['bits_per_element']:>8.3f} "
                       f"{r['rel_error']:>10.3e} {r['sqnr_db']:>8.2f}")
    return "\n".join(out)


def main(argv=None):
    """``python -m lowprec.ray report|quantize …`` (``--help`` for the options)."""
    ap = argparse.ArgumentParser(prog="python -m lowprec.ray", description=__doc__.split("\n")[0],
                                 epilog="examples:\n  python -m lowprec.ray report ckpt/ -s mxfp4 --address auto\n"
                                        "  python -m lowprec.ray report ckpt/ -s mxfp4 --dry-run --workers 64\n"
                                        "  python -m lowprec.ray quantize ckpt/ -s mxfp8 -o ckpt-mxfp8/",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report", help="the report of a checkpoint, one task per tensor or shard")
    q = sub.add_parser("quantize", help="quantize a checkpoint, one task per shard")
    for a in (r, q):
        a.add_argument("path", help="a checkpoint: .safetensors, .gguf, .npy, a sharded folder or its index")
        a.add_argument("--address", help="the Ray cluster (auto, HOST:6379); none: a local one")
        a.add_argument("--dry-run", action="store_true", help="print the plan and estimated times; run nothing")
        a.add_argument("--workers", type=int, help="workers assumed by --dry-run (default: CPUs here)")
        a.add_argument("--max-retries", type=int, default=3, help="retries of a task whose worker died")
    r.add_argument("-s", "--scheme", action="append", help="a scheme (repeatable; default: the ten)")
    r.add_argument("--per", choices=("tensor", "shard"), default="tensor")
    r.add_argument("--include", action="append", default=[], help="tensor name glob (repeatable)")
    r.add_argument("--exclude", action="append", default=[], help="tensor name glob (repeatable)")
    r.add_argument("--json", action="store_true", help="the rows as JSON")
    q.add_argument("-s", "--scheme", required=True, help="the scheme")
    q.add_argument("-o", "--output", required=True, help="the output folder")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "report":
            res = report(a.path, a.scheme, per=a.per, include=a.include, exclude=a.exclude,
                         address=a.address, max_retries=a.max_retries, dry_run=a.dry_run,
                         workers=a.workers)
            if a.dry_run:
                print(res.text())
            elif a.json:
                print(json.dumps(res, indent=1))
            else:
                print(_table(res))
        else:
            res = quantize(a.path, a.scheme, a.output, address=a.address,
                           max_retries=a.max_retries, dry_run=a.dry_run, workers=a.workers)
            print(res.text() if a.dry_run else f"{res[0]} shards written, {res[1]} kept; index in {a.output}")
    except (ValueError, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
