"""The registry of benchmark workloads, in the order ``--list`` shows them."""

from __future__ import annotations

from sluice.bench.workloads.amr_ckpt import AmrCkpt
from sluice.bench.workloads.amr_n1 import AmrN1
from sluice.bench.workloads.cdo_nco import CdoNco
from sluice.bench.workloads.ckpt_burst import CkptBurst
from sluice.bench.workloads.create_once import CreateOnce
from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, format_size, parse_size
from sluice.bench.workloads.ensemble import Ensemble
from sluice.bench.workloads.farm_ensemble import FarmEnsemble
from sluice.bench.workloads.fpp_netcdf import FppNetcdf
from sluice.bench.workloads.h5write import H5Write
from sluice.bench.workloads.ior_shared import IorShared
from sluice.bench.workloads.limits import Limits
from sluice.bench.workloads.nc_append import NcAppend
from sluice.bench.workloads.overhead import Overhead
from sluice.bench.workloads.randread import RandRead
from sluice.bench.workloads.smallio import SmallIO
from sluice.bench.workloads.smallread import SmallRead
from sluice.bench.workloads.strided_shared import StridedShared
from sluice.errors import UserError

WORKLOADS: dict[str, type[Workload]] = {
    w.name: w
    for w in (
        Limits, SmallIO, Ensemble, CkptBurst, FppNetcdf, AmrN1, AmrCkpt, Overhead,
        NcAppend, RandRead, SmallRead, CreateOnce, StridedShared, IorShared, FarmEnsemble, H5Write, CdoNco,
    )
}  # fmt: skip


def get(name: str) -> Workload:
    try:
        return WORKLOADS[name]()
    except KeyError:
        raise UserError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)}; see --list)") from None


__all__ = [
    "WORKLOADS", "Metric", "Param", "RunContext", "Workload", "format_size", "get", "parse_size",
]  # fmt: skip
