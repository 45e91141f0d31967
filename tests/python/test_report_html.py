"""Tests of the HTML report (sluice report --html).

The jobs come from real logs: the demo workload and a small Python program
run under `sluice run`. The native parts come from SLUICE_NATIVE_DIR, else
from the dev build (<repo>/build/dev/native). The rendering checks use
headless Chromium, which scripts/setup installs: without it they fail.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))

from sluice.report.html import esc, write_html  # noqa: E402
from sluice.report.model import OP_COUNTERS, FileTotals, Job, load_job, merge  # noqa: E402

NATIVE = Path(os.environ.get("SLUICE_NATIVE_DIR") or REPO / "build" / "dev" / "native")
PLOTS = ["sizes", "ops", "files", "timeline", "time", "heatmap"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# The summary table's rows: POSIX and STDIO counters added up.
GROUPS = {
    "opens": ("POSIX_OPENS", "STDIO_OPENS"),
    "reads": ("POSIX_READS", "STDIO_READS"),
    "writes": ("POSIX_WRITES", "STDIO_WRITES"),
    "seeks": ("POSIX_SEEKS", "STDIO_SEEKS"),
    "stats": ("POSIX_STATS",),
    "fsync/fdatasync/fflush": ("POSIX_FSYNCS", "POSIX_FDSYNCS", "STDIO_FLUSHES"),
    "unlinks": ("POSIX_UNLINKS",),
    "renames": ("POSIX_RENAMES",),
    "mkdirs": ("POSIX_MKDIRS",),
    "errors": ("POSIX_ERRORS", "STDIO_ERRORS"),
    "bytes read": ("POSIX_BYTES_READ", "STDIO_BYTES_READ"),
    "bytes written": ("POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN"),
    "read time (s)": ("POSIX_F_READ_TIME", "STDIO_F_READ_TIME"),
    "write time (s)": ("POSIX_F_WRITE_TIME", "STDIO_F_WRITE_TIME"),
    "metadata time (s)": ("POSIX_F_META_TIME", "STDIO_F_META_TIME"),
}

# A file name that HTML, attributes and matplotlib's mathtext would all
# misread if it were not escaped ("/" cannot be part of a name).
WEIRD = "w <script>alert('x')<\\script> & \"q\" $\\frac{$ 100%.dat"


# --------------------------------------------------------------------------
# helpers


def sluice(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SLUICE_NATIVE_DIR=str(NATIVE))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "python"), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "sluice", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"sluice {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}"
    return proc


class Page(HTMLParser):
    """What the tests look at in a report: images, plot figures, cells with
    exact values, file-table paths, scripts, the visible text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.imgs: list[dict[str, str]] = []
        self.figures: list[str] = []
        self.noplots: list[str] = []
        self.meta: dict[str, str] = {}
        self.attrs: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[dict[str, str]] = []
        self.groups: dict[str, dict[str, str]] = {}
        self.counters: dict[str, dict[str, str]] = {}
        self.tables: dict[str, list[dict]] = {}
        self.text: list[str] = []
        self._row: tuple[str, str] | None = None
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._cur: dict | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.attrs.append((tag, a))
        if tag == "img":
            self.imgs.append(a)
        elif tag == "script":
            self.scripts.append(a)
        elif tag == "meta" and "name" in a:
            self.meta[a["name"]] = a.get("content", "")
        elif tag == "figure" and "plot" in a.get("class", "").split():
            self.figures.append(a.get("id", ""))
        elif tag == "section" and "noplot" in a.get("class", "").split():
            self.noplots.append(a.get("id", ""))
        elif tag == "table":
            self._table = a.get("id")
            if self._table:
                self.tables[self._table] = []
        elif tag == "tr":
            if "data-group" in a:
                self._row = ("group", a["data-group"])
                self.groups[a["data-group"]] = {}
            elif "data-counter" in a:
                self._row = ("counter", a["data-counter"])
                self.counters[a["data-counter"]] = {}
            else:
                self._row = None
            if self._table in self.tables:
                self._cur = {"path": None, "app": [], "fs": []}
                self.tables[self._table].append(self._cur)
        elif tag == "td":
            if "data-side" in a and self._row:
                kind, name = self._row
                (self.groups if kind == "group" else self.counters)[name][a["data-side"]] = a["data-value"]
            if self._cur is not None and "data-side" in a:
                self._cur[a["data-side"]].append(a["data-value"])
            if self._cur is not None and a.get("class") == "path":
                self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._cur is not None:
            self._cur["path"] = "".join(self._cell)
            self._cell = None
        elif tag == "table":
            self._table = None
            self._cur = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def alltext(self) -> str:
        return " ".join(" ".join(self.text).split())


def pngs(page: Page) -> list[bytes]:
    out = []
    for img in page.imgs:
        src = img.get("src", "")
        assert src.startswith("data:image/png;base64,"), src[:60]
        out.append(base64.b64decode(src.split(",", 1)[1], validate=True))
    return out


def colours(rgb: np.ndarray) -> int:
    """How many distinct colours an (N, 3) array of 0-255 pixels holds."""
    return len(np.unique((rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]))


def check_png(data: bytes) -> None:
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 8_000, f"a plot of {len(data)} bytes is suspiciously small"
    pixels = mpimg.imread(io.BytesIO(data), format="png")
    h, w = pixels.shape[:2]
    assert w >= 800 and h >= 150, (w, h)
    rgb = (pixels[..., :3] * 255).astype(np.int32).reshape(-1, 3)
    # Something is drawn: several colours, and more than a sliver of non-white.
    assert colours(rgb) > 8
    assert (rgb.min(axis=1) < 230).mean() > 0.01


def check_structure(page: Page, text: str, expected: list[str]) -> None:
    """Images = plots = what the page says it drew; every image a real PNG."""
    assert page.figures == [f"plot-{k}" for k in expected]
    assert sorted(page.noplots) == sorted(f"noplot-{k}" for k in PLOTS if k not in expected)
    assert len(page.imgs) == len(expected) == int(page.meta["sluice-plots"])
    assert text.count("data:image/png;base64,") == len(expected)
    for data in pngs(page):
        check_png(data)
    # Self-contained: nothing is fetched, the only script is the inline check.
    for tag, attrs in page.attrs:
        for k in ("src", "href", "srcset", "action", "poster", "data"):
            if k in attrs:
                assert attrs[k].startswith("data:"), (tag, k, attrs[k][:60])
    assert len(page.scripts) == 1 and "src" not in page.scripts[0]
    assert text.count("<script") == 1
    assert not re.search(r"https?:|<link|@import|url\(", text)
    csp = [a["content"] for t, a in page.attrs if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(csp) == 1 and "default-src 'none'" in csp[0] and "unsafe-inline" not in csp[0]


def check_summary(page: Page, app: dict, fs: dict) -> None:
    """The summary table and the counter table hold the job's exact values."""
    assert set(page.groups) == set(GROUPS)
    for label, names in GROUPS.items():
        for side, c in (("app", app), ("fs", fs)):
            want = sum(c.get(n, 0) for n in names)
            got = json.loads(page.groups[label][side])
            assert got == want and type(got) is type(want), (label, side, got, want)
    assert set(page.counters) == set(app) | set(fs)
    for name, cells in page.counters.items():
        for side, c in (("app", app), ("fs", fs)):
            got = json.loads(cells[side])
            assert got == c[name] and type(got) is type(c[name]), (name, side, got, c[name])


def file_bytes(f: dict) -> int:
    return sum(v for k, v in f.items() if k.endswith(("_BYTES_READ", "_BYTES_WRITTEN")))


def file_ops(f: dict) -> int:
    return sum(f.get(k, 0) for k in OP_COUNTERS)


def chromium(*args: str, tmp: Path, timeout: int = 180) -> subprocess.CompletedProcess[str]:
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed (scripts/setup installs the Debian package chromium)")
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
            *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def browser_title(page: Path, tmp: Path) -> str:
    proc = chromium("--dump-dom", page.resolve().as_uri(), tmp=tmp)
    m = re.search(r"<title>(.*?)</title>", proc.stdout, re.S)
    assert m, f"no title in chromium's DOM dump (status {proc.returncode}):\n{proc.stderr[-2000:]}"
    return m.group(1)


# --------------------------------------------------------------------------
# fixtures: real jobs


@pytest.fixture(scope="module")
def native() -> Path:
    for name in ("libsluice.so", "sluice-demo-sim"):
        if not (NATIVE / name).exists():
            pytest.fail(f"{NATIVE / name} is missing: build it (cmake -S {REPO} -B {REPO}/build/dev -G Ninja "
                        f"&& cmake --build {REPO}/build/dev) or set SLUICE_NATIVE_DIR")
    return NATIVE


@pytest.fixture(scope="module")
def demo(native: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The demo workload; its report written by `sluice report --json --html`."""
    d = tmp_path_factory.mktemp("demo")
    sluice("demo", "--dir", str(d / "run"), "--steps", "20", "--html", str(d / "from-demo.html"))
    out = d / "report.html"
    proc = sluice("report", "--json", "--html", str(out), str(d / "run" / "logs"))
    return {"dir": d, "logs": d / "run" / "logs", "html": out, "text": out.read_text("utf-8"),
            "json": json.loads(proc.stdout), "job": load_job([d / "run" / "logs"])}


@pytest.fixture(scope="module")
def weird(native: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A small program whose file names need escaping."""
    d = tmp_path_factory.mktemp("weird")
    data = d / "data"
    code = ("import os, sys\n"
            "d = sys.argv[1]\n"
            "os.makedirs(d, exist_ok=True)\n"
            "with open(os.path.join(d, sys.argv[2]), 'w') as f:\n"
            "    f.write('x' * 5000)\n"
            "with open(os.path.join(d, sys.argv[2])) as f:\n"
            "    f.read()\n"
            "with open(os.path.join(d, 'plain.bin'), 'wb') as f:\n"
            "    f.write(b'y' * 100000)\n")
    sluice("run", "--quiet", "--log-dir", str(d / "logs"), "--path", str(data), "--",
           sys.executable, "-c", code, str(data), WEIRD, cwd=d)
    out = d / "report.html"
    proc = sluice("report", "--json", "--html", str(out), str(d / "logs"))
    return {"dir": d, "path": str(data / WEIRD), "html": out, "text": out.read_text("utf-8"),
            "json": json.loads(proc.stdout)}


def _filtered(job: Job, keep) -> Job:
    logs = copy.deepcopy(job.logs)
    for log in logs:
        log.records = [r for r in log.records if keep(r)]
    return merge(job.job_id, logs)


def _many(job: Job, n: int = 3000) -> Job:
    src = [f for f in job.files if f.bytes()]
    files = [FileTotals(f"/scratch/run/{i:05d}/out<{i}>&.dat", dict(src[i % len(src)].app),
                        dict(src[i % len(src)].fs), {1}) for i in range(n)]
    return Job(job.job_id, job.logs, job.app, job.fs, files, job.start_ns, job.end_ns)


# --------------------------------------------------------------------------
# structure of the demo's report


def test_demo_report_structure(demo: dict) -> None:
    page = Page(demo["text"])
    check_structure(page, demo["text"], PLOTS)
    assert len(demo["text"].encode()) < 2_000_000
    # The page `sluice demo --html` writes is the same report.
    check_structure(Page((demo["dir"] / "from-demo.html").read_text("utf-8")),
                    (demo["dir"] / "from-demo.html").read_text("utf-8"), PLOTS)


def test_demo_summary_is_exact(demo: dict) -> None:
    j = demo["json"]
    page = Page(demo["text"])
    assert 'id="mpiio"' not in demo["text"]   # a job without MPI-IO has no MPI-IO section
    check_summary(page, j["app"], j["fs"])
    text = page.alltext
    assert j["job_id"] in text
    assert f"processes {j['processes']}" in text
    assert f"files recorded {len(j['files'])}" in text
    # Visible numbers match too, not only the data attributes.
    assert f"{j['app']['POSIX_WRITES'] + j['app']['STDIO_WRITES']:,}" in text


def test_demo_top_files(demo: dict) -> None:
    j = demo["json"]
    page = Page(demo["text"])
    n = len(j["files"])
    assert n > 20, "the demo should record more files than the tables show"
    # Each row's app cells: bytes, then operations.
    for tid, measure, cell in (("top-bytes", file_bytes, 0), ("top-ops", file_ops, 1)):
        rows = page.tables[tid][1:]  # the header row first
        assert len(rows) == 20
        want = sorted((measure(f["app"]) for f in j["files"]), reverse=True)[:20]
        got = [json.loads(r["app"][cell]) for r in rows]
        assert got == want, tid
        by_path = {f["path"]: f for f in j["files"]}
        for r in rows:
            assert r["path"] in by_path
    assert f"{n - 20:,} more files are left out" in page.alltext
    # The plots say how many files they leave out.
    assert f"{n - 20:,} more files with operations are left out" in page.alltext


def test_escaping(weird: dict) -> None:
    text = weird["text"]
    page = Page(text)
    paths = [r["path"] for r in page.tables["top-bytes"][1:]]
    assert weird["path"] in paths, paths
    assert weird["path"] in [f["path"] for f in weird["json"]["files"]]
    assert "<script>alert" not in text and "<\\script>" not in text
    assert esc(weird["path"]) in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;\\script&gt; &amp; &quot;q&quot;" in text
    assert text.count("<script") == 1
    check_structure(page, text, PLOTS)
    check_summary(page, weird["json"]["app"], weird["json"]["fs"])


def test_esc() -> None:
    assert esc("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&#x27;"
    assert esc("x\ny\x1b") == "x\\ny\\x1b"


# --------------------------------------------------------------------------
# jobs of every shape


@pytest.mark.parametrize("shape,expected", [
    ("zero", []),
    ("one", PLOTS),
    ("stdio", ["ops", "files", "timeline", "time", "heatmap"]),
    ("posix", PLOTS),
    ("many", PLOTS),
])
def test_job_shapes(demo: dict, tmp_path: Path, shape: str, expected: list[str]) -> None:
    job: Job = demo["job"]
    if shape == "zero":
        j = _filtered(job, lambda r: False)
    elif shape == "one":
        j = _filtered(job, lambda r: r.path == job.files[0].path and r.module == "POSIX")
    elif shape == "stdio":
        j = _filtered(job, lambda r: r.module == "STDIO")
    elif shape == "posix":
        j = _filtered(job, lambda r: r.module == "POSIX")
    else:
        j = _many(job)
    out = tmp_path / f"{shape}.html"
    write_html(j, out)
    text = out.read_text("utf-8")
    page = Page(text)
    check_structure(page, text, expected)
    check_summary(page, j.app, j.fs)
    assert len(text.encode()) < 2_000_000
    rows = {t: len(r) - 1 for t, r in page.tables.items() if t.startswith("top-")}
    if shape == "zero":
        assert j.files == [] and rows == {}
        assert "No files were recorded." in page.alltext
    else:
        assert rows == {"top-bytes": min(20, len(j.files)), "top-ops": min(20, len(j.files))}
    if shape == "stdio":
        assert "No POSIX reads or writes were recorded" in page.alltext
    if shape == "many":
        assert "2,980 more files are left out" in page.alltext
        assert "2,980 more files with operations are left out" in page.alltext
        assert "&lt;7&gt;&amp;.dat" in text and "<7>" not in text


# --------------------------------------------------------------------------
# rendering in a browser


def test_chromium_renders_every_image(demo: dict, weird: dict, tmp_path: Path) -> None:
    assert browser_title(demo["html"], tmp_path) == f"sluice report: ok {len(PLOTS)}"
    # The page with the hostile file name: its name did not run as script.
    assert browser_title(weird["html"], tmp_path) == f"sluice report: ok {len(PLOTS)}"


def test_chromium_notices_a_broken_image(demo: dict, tmp_path: Path) -> None:
    text = demo["text"]
    start = text.index("data:image/png;base64,") + len("data:image/png;base64,")
    broken = tmp_path / "broken.html"
    broken.write_text(text[:start] + "AAAA" + text[start + 4 :], "utf-8")
    title = browser_title(broken, tmp_path)
    assert title == f"sluice report: 1 of {len(PLOTS)} images failed"


def test_chromium_screenshot(demo: dict, tmp_path: Path) -> None:
    shot = tmp_path / "s.png"
    proc = chromium(f"--screenshot={shot}", "--window-size=1200,3000", demo["html"].resolve().as_uri(),
                    tmp=tmp_path)
    assert shot.exists(), f"no screenshot (status {proc.returncode}):\n{proc.stderr[-2000:]}"
    pixels = mpimg.imread(str(shot))
    assert pixels.shape[:2] == (3000, 1200)
    rgb = (pixels[..., :3] * 255).astype(np.int32).reshape(-1, 3)
    assert colours(rgb) > 50, "the screenshot is (nearly) a single colour"
    assert (rgb.min(axis=1) < 200).mean() > 0.02, "the screenshot is nearly blank"
    # The read bars of the access-size plot are on screen: the plots rendered.
    read_blue = np.array([0x21, 0x66, 0xAC])
    assert (np.abs(rgb - read_blue).max(axis=1) <= 12).sum() > 500


# --------------------------------------------------------------------------
# the per-rank heatmap


MPIRUN = ["mpirun", "--oversubscribe", "-np", "4"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}


@pytest.fixture(scope="module")
def mpi_job(native: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """tests/progs/mpi_write on 4 ranks: each writes 4 KiB to its own file and
    1 KiB to a shared one, then rank 0 reads the shared file (4 KiB)."""
    from conftest import bin_path

    d = tmp_path_factory.mktemp("mpi")
    (d / "data").mkdir()
    env = dict(os.environ, SLUICE_NATIVE_DIR=str(NATIVE), **MPI_ENV)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "python"), os.environ.get("PYTHONPATH")) if p)
    subprocess.run([sys.executable, "-m", "sluice", "run", "--quiet", "--log-dir", str(d / "logs"), "--path",
                    str(d / "data"), "--", *MPIRUN, str(bin_path("mpi_write")), str(d / "data")],
                   env=env, check=True, capture_output=True, timeout=300)
    out = d / "report.html"
    sluice("report", "--html", str(out), str(d / "logs"))
    return {"job": load_job([d / "logs"]), "text": out.read_text("utf-8")}


def test_heatmap_rows_are_ranks_with_exact_bytes(mpi_job: dict) -> None:
    from sluice.report.heatmap import heatmap

    job = mpi_job["job"]
    hm = heatmap(job)
    assert hm.rows == ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert hm.write.sum(axis=1).tolist() == [5120.0] * 4
    assert hm.read.sum(axis=1).tolist() == [4096.0, 0.0, 0.0, 0.0]
    assert len(hm.edges) == 101 and hm.edges[0] == 0.0 and hm.edges[-1] >= job.runtime
    # Each rank's bytes lie in the bins of its own first-to-last write.
    for i, log in enumerate(sorted(job.logs, key=lambda l: l.rank)):
        shift = (log.start_ns - job.start_ns) / 1e9
        recs = [r for r in log.records if r.module == "POSIX" and r.app["POSIX_BYTES_WRITTEN"] > 0]
        lo = min(r.app["POSIX_F_WRITE_START_TIMESTAMP"] for r in recs) + shift
        hi = max(r.app["POSIX_F_WRITE_END_TIMESTAMP"] for r in recs) + shift
        bins = np.nonzero(hm.write[i])[0]
        w = hm.bin_seconds
        assert bins.min() >= int(lo / w) - 1 and bins.max() <= int(hi / w) + 1, (i, bins, lo, hi, w)


def test_heatmap_in_the_page(mpi_job: dict) -> None:
    text = mpi_job["text"]
    page = Page(text)
    assert "plot-heatmap" in page.figures
    caption = page.alltext[page.alltext.index("Bytes per process over time"):]
    assert "One row per process (4 rows; read 4.0 KiB, written 20.0 KiB), 100 bins of" in caption
    check_png(pngs(page)[page.figures.index("plot-heatmap")])


def test_heatmap_spreads_an_interval_evenly() -> None:
    from sluice.report.heatmap import _spread

    edges = np.linspace(0.0, 1.0, 5)
    got = _spread(edges, np.array([0.25, 0.6, 0.9]), np.array([0.75, 0.6, 2.0]), np.array([1000, 7, 0]))
    # [0.25, 0.75] halves into bins 1 and 2; the instant at 0.6 is one bin; no bytes, nothing
    assert got.tolist() == [0.0, 500.0, 507.0, 0.0]


def test_heatmap_of_darshan_logs() -> None:
    """Darshan's own logs: a row per rank with that rank's bytes; a log whose
    files Darshan reduced to shared (rank -1) records has no per-rank bytes."""
    darshan = pytest.importorskip("darshan")
    from sluice.report.heatmap import heatmap
    from sluice.report.plots import rank_heatmap

    examples = Path(darshan.__file__).parent / "examples" / "example_logs"
    job = load_job([examples / "ior_hdf5_example.darshan"])
    hm = heatmap(job)
    want = {}
    for log in job.logs:
        if log.rank >= 0:
            want[f"rank {log.rank}"] = sum(r.app.get("POSIX_BYTES_WRITTEN", 0) + r.app.get("STDIO_BYTES_WRITTEN", 0)
                                           for r in log.records if r.module in ("POSIX", "STDIO"))
    assert hm.rows == sorted(want, key=lambda r: int(r.split()[1]))
    assert dict(zip(hm.rows, hm.write.sum(axis=1).tolist())) == want
    assert sum(want.values()) > 0
    shared = rank_heatmap(load_job([examples / "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan"]))
    assert shared.png is None and "shared (rank -1) records" in shared.note


def test_demo_prediction_is_sluice_predicts(demo: dict) -> None:
    """The page ends its advice with `sluice predict`'s table: a row per
    mode, the profile row what the job sent to the file system, the same
    numbers as `sluice predict --json` on the same logs."""
    from sluice import predict

    text = demo["text"]
    assert 'id="prediction"' in text
    rows = re.findall(r'<tr data-mode="(\w+)"><td>\w+</td>(.*?)</tr>', text)
    assert [m for m, _ in rows] == ["profile", "buffer", "stage", "auto", "acb"]
    cells = dict(rows)
    doc = predict.predict(demo["job"])
    for mode in ("profile", "buffer", "stage", "auto"):
        fs = doc["modes"][mode]["fs"]
        assert f'<td class="num">{fs["POSIX_WRITES"] + fs["STDIO_WRITES"]:,.0f}</td>' in cells[mode], mode
    j = demo["json"]
    assert doc["modes"]["profile"]["fs"]["POSIX_WRITES"] == sum(f["fs"].get("POSIX_WRITES", 0) for f in j["files"])
