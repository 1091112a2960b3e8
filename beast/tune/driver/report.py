"""The text of a tuning run's summary: :func:`format_report` (the table ``beast tune`` prints) and
the progress line, for the reports of both fronts (:mod:`beast.tune.driver.session`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import BeastError

from ..kernels.families import FAMILIES, get_family
from ..kernels.paper import GemmSettings
from ..device.measure import (COMPILE_ERROR, CONTEXT_LOST, CRASHED, LAUNCH_ERROR, OK, PRUNED, TIMEOUT, WRONG, Measurement)

if TYPE_CHECKING:
    from .session import TuneReport, TuneResult


def _other_device(report: "TuneReport") -> list[str]:
    """A line when the space was pruned for a device other than the GPU that measured it (the
    default profile is the paper's K40c): its limits are not this GPU's."""
    pruned, gpu = report.compute_capability, report.gpu_compute_capability
    if pruned is None or gpu is None or tuple(pruned) == tuple(gpu):
        return []
    return [f"note: the space was pruned for the {report.device_profile} profile (compute capability "
            f"{pruned[0]}.{pruned[1]}), not for the GPU that measured it ({gpu[0]}.{gpu[1]}): "
            f"--device auto prunes for the GPU at hand (and lets the speed model bound its times)"]


def _untuned(report: "TuneReport") -> list[str]:
    """Lines naming the template's settings that this device ignores and the space holds at
    one value (so they were never tuned): the shared-memory bank size from Maxwell on."""
    cc = report.compute_capability
    if cc is None or cc[0] < 5 or "shmem_banks" not in report.iterators:
        return []
    values = {r.config.get("shmem_banks") for r in report.results}
    if len(values) != 1:
        return []
    return [f"not tuned: shmem_banks (compute capability {cc[0]}.{cc[1]} has fixed 4-byte shared-memory "
            f"banks; the space holds one value)"]


def progress_line(done: int, total: int | None, best: TuneResult | None,
                  report: TuneReport | None = None) -> str:
    """One line for a progress display: ``[  120/4208]  best 812.3 GFLOP/s  dim_m=16 dim_n=8 ...``;
    with ``report``, the GPU's busy share and the rate first (``GPU 71 % busy, 3.2 configs/s``)."""
    width = len(str(total)) if total is not None else 1
    count = f"[{done:>{width}}/{total}]" if total is not None else f"[{done}]"
    busy = f"  {pace(report)}" if report is not None and report.gpu_busy is not None else ""
    if best is None or best.gflops is None:
        return f"{count}{busy}  no verified configuration yet"
    cfg = " ".join(f"{k}={v}" for k, v in best.config.items())
    return f"{count}{busy}  best {best.gflops:.1f} GFLOP/s  {cfg}"


def pace(report: TuneReport) -> str:
    """``GPU 71 % busy, 3.2 configs/s``: how much of the wall time the GPU measured, and the rate."""
    rate = f"{report.rate or 0.0:.2f} configs/s"
    return rate if report.gpu_busy is None else f"GPU {100 * report.gpu_busy:.0f} % busy, {rate}"


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"


def _fmt(x: float | None, spec: str, missing: str = "n/a") -> str:
    return missing if x is None else format(x, spec)


def _ci_cell(meas: Measurement) -> str:
    """The table's CI % of one measurement: its confidence interval, or how it was timed."""
    if meas.extra.get("twin_of"):
        return "twin"
    if meas.extra.get("early_cut"):
        return "cut"
    return _fmt(None if meas.ci_rel is None else 100 * meas.ci_rel, ".1f")


def format_report(report: TuneReport, top: int = 10) -> str:
    """The summary of a tuning run: problem, device, counts, cuBLAS, and a table of the best
    configurations with GFLOP/s, % of cuBLAS and % of the device's peak."""
    st = report.settings
    try:
        routine = GemmSettings.from_mapping(st).routine
    except BeastError:
        routine = "gemm"
    m, n, k = report.size
    family = get_family(report.family) if report.family in FAMILIES else None
    lines = [f"{routine}  M={m} N={n} K={k}  on {report.device_name or 'unknown GPU'}"
             f" (profile {report.device_profile}), kernel family {report.family}"
             + (f": {family.what}" if family is not None else "")]
    peak = report.peak_gflops
    precision = st.get("precision", "?")
    units = family.peak_what if family is not None else "CUDA cores"
    lines.append(f"device peak: {_fmt(peak, '.1f')} GFLOP/s ({precision}, {units})")
    ref = report.reference
    ref_gflops = ref.gflops if ref is not None and ref.status == OK else None
    if ref_gflops is not None:
        lines.append(f"cuBLAS:      {ref_gflops:.1f} GFLOP/s ({ref.ms:.4g} ms)")
    else:
        lines.append("cuBLAS:      not measured")
    c = report.counts
    failed = sum(v for s, v in c.items() if s not in (OK, PRUNED))
    lost = "".join(f", {c[s]} {words}" for s, words in ((TIMEOUT, "timed out"), (CRASHED, "crashed"),
                                                         (CONTEXT_LOST, "lost the CUDA context")) if c.get(s))
    lines.append(f"tried {report.tried} configuration(s): {c[OK]} verified and timed, {failed} failed "
                 f"({c[COMPILE_ERROR]} compile errors, {c[LAUNCH_ERROR]} launch errors, "
                 f"{c[WRONG]} wrong results{lost})"
                 + (f", {c[PRUNED]} pruned by the speed model (could not beat the best)" if c.get(PRUNED) else ""))
    ended = sum(1 for r in report.results if r.measurement.extra.get("ended_run"))
    if ended:
        lines.append(f"{ended} configuration(s) ended a previous run while measured: logged as crashed, "
                     f"not measured again")
    if report.resumed:
        lines.append(f"({report.resumed} resumed from {report.log_path}, {report.measured} measured now)")
    if report.measured and report.wall_s > 0:
        workers = f", {report.compile_workers} compile threads" if report.compile_workers else ""
        lines.append(f"measured {report.measured} in {_duration(report.wall_s)}: {pace(report)}{workers}")
    if report.cut:
        lines.append(f"{report.cut} clear loser(s) timed from their warm-up launches only, far slower than "
                     f"the best so far (CI % 'cut')")
    if report.twins:
        lines.append(f"{report.twins} configuration(s) run a binary and launch measured before: "
                     f"measured once, time copied (CI % 'twin')")
    lines += _untuned(report) + _other_device(report)
    if report.interrupted:
        lines.append("interrupted: run the same command again to resume from the log")
    if report.time_up:
        lines.append(f"stopped at the time limit ({_duration(report.time_limit or 0.0)}): "
                     f"run the same command again to go on from the log")
    if report.stopped:
        lines.append(f"stopped: {report.stopped}")
    best = report.best(top)
    if not best:
        lines.append("no configuration verified")
        return "\n".join(lines)
    names = list(report.iterators)
    head = ["rank", "GFLOP/s", "% cuBLAS", "% peak", "ms", "CI %"] + names
    rows = []
    for i, r in enumerate(best, 1):
        g = r.gflops
        rows.append([str(i), f"{g:.1f}",
                     _fmt(100 * g / ref_gflops if ref_gflops else None, ".1f"),
                     _fmt(100 * g / peak if peak else None, ".1f"),
                     _fmt(r.ms, ".4g"),
                     _ci_cell(r.measurement)]
                    + [str(r.config.get(name, "")) for name in names])
    widths = [max(len(h), *(len(row[j]) for row in rows)) for j, h in enumerate(head)]
    lines.append("")
    lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for row in rows:
        lines.append("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))
    return "\n".join(lines)


__all__ = ["format_report", "progress_line", "pace"]
