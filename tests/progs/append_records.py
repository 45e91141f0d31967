"""append_records.c's workload through the Python wheels (h5py and
netCDF4, which bundle their own HDF5 and lock every file they open):

    append_records.py h5py|netcdf4 FILE RECORDS
"""

from __future__ import annotations

import sys

import numpy as np

WIDTH = 32


def row(r: int) -> np.ndarray:
    return r * 0.5 + np.arange(WIDTH, dtype="f8")


def append_h5py(path: str, records: int) -> None:
    import h5py

    with h5py.File(path, "w") as f:
        d = f.create_dataset("field", shape=(0, WIDTH), maxshape=(None, WIDTH), chunks=(64, WIDTH),
                             dtype="f8", track_times=False)
        for r in range(records):
            d.resize(r + 1, axis=0)
            d[r] = row(r)
            if r % 10 == 9:
                f.flush()


def append_netcdf4(path: str, records: int) -> None:
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", WIDTH)
        t = nc.createVariable("time", "f8", ("time",))
        v = nc.createVariable("field", "f8", ("time", "x"))
        v.units = "K"
        for r in range(records):
            t[r] = r * 3600.0
            v[r, :] = row(r)
            if r % 100 == 99:
                nc.sync()


if __name__ == "__main__":
    kind, path, records = sys.argv[1], sys.argv[2], int(sys.argv[3])
    {"h5py": append_h5py, "netcdf4": append_netcdf4}[kind](path, records)
