"""Choose the device once (``auto`` = CUDA, then MPS, then CPU) and pass it down; CPU threads;
and whether a process still runs (used by the thread claims here and the zoo's locks)."""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import socket
import tempfile
import time
from pathlib import Path

import torch

from .core import check
from .files import replace_file

_DEVICE = re.compile(r"^(auto|cpu|cuda|mps)(?::([0-9]{1,3}))?$")
DEVICE_ALLOWED = "auto, cpu, cuda, cuda:N (N a device index: 0, 1, ...) or mps"


def check_device(device: object) -> str:
    """The one device-string check: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps`` (ASCII
    digits only; an index only after cuda). Returns the string; availability is
    ``resolve_device``'s business."""
    text = str(device) if isinstance(device, torch.device) else device
    m = _DEVICE.match(text) if isinstance(text, str) else None
    if m is None or (m[2] is not None and m[1] != "cuda"):
        raise ValueError(f"device={device!r} is not allowed: one of {DEVICE_ALLOWED}")
    return text


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``auto`` picks CUDA, then MPS, then CPU; an explicit device must be available."""
    if isinstance(device, torch.device):
        return device
    device = check_device("auto" if device is None else device)
    kind, _, index = device.partition(":")
    if kind == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} is not available here: no CUDA device; use 'auto'")
    if kind == "cuda" and index and int(index) >= torch.cuda.device_count():
        raise ValueError(f"device={device!r} is not available here: CUDA devices are "
                         f"0..{torch.cuda.device_count() - 1}")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device={device!r} is not available here: no MPS device; use 'auto'")
    return torch.device(device)


# --- processes: is a pid (on this host) still the process that wrote its name somewhere? -----

HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]  # short, no dots


def owner_tag() -> str:
    """``<pid>-<host>``: how lock files and hidden folders name the process that made them."""
    return f"{os.getpid()}-{HOST}"


def process_start(pid: int) -> str | None:
    """The start time of ``pid`` (Linux /proc), which tells a reused pid from the original;
    None when it cannot be read or the process is a zombie (killed, not yet reaped)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError, ValueError):
        return None
    return None if fields[0] in "ZX" else fields[19]


def process_alive(pid: int, host: str | None = HOST) -> bool | None:
    """Whether ``pid`` runs; None when that cannot be told (another host, or Windows)."""
    if host != HOST or os.name == "nt":
        return None
    if not 0 < pid < 2**31:
        return False  # no such pid (os.kill would signal a process group, or overflow)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    if Path("/proc/self/stat").exists() and process_start(pid) is None:
        return False  # a zombie
    return True


def make_generator(seed: int, device: torch.device) -> torch.Generator:
    """A generator seeded with ``seed`` that lives on ``device``, so batches are drawn where
    they are used."""
    return torch.Generator(device=device).manual_seed(int(seed))


# --- CPU threads ---------------------------------------------------------------------------
# Tiny models on a shared CPU run fastest on one thread per process: two torch threads per
# process beside another busy process run several times slower than one (benchmarks/README.md).
# So the default is the
# cores that are actually free (affinity minus the cores other work keeps busy now:
# ``busy_elsewhere``), divided among the processes
# the job starts, never more than that. Other toymech processes of this user count as busy
# from the moment they choose (each leaves a claim file holding its thread count), which the
# CPU counters may not yet see; an automatic choice follows the free cores at the loop's
# evaluation steps (``rebalance``): lowered when another toymech process started meanwhile,
# raised when the others have finished and the cores are idle.
_CHOSEN: dict[str, object] = {}
# torch's thread count when toymech first imported this module: a different count later that
# toymech did not set is the user's own ``torch.set_num_threads``, which ``use_thread_policy``
# and ``rebalance`` keep
_TORCH_AT_IMPORT = torch.get_num_threads()
KEEP_TORCH = "torch"  # TOYMECH_THREADS=torch: toymech never sets torch's thread count


def _claims_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"toymech-threads-{os.getuid() if hasattr(os, 'getuid') else 0}"


def claimed_by_others() -> int:
    """Torch threads claimed by this user's other live toymech processes (claims of dead ones
    are removed)."""
    total, folder = 0, _claims_dir()
    if not folder.is_dir():
        return 0
    for item in folder.iterdir():
        if not re.fullmatch(r"[0-9]{1,10}", item.name) or int(item.name) == os.getpid():
            continue
        if process_alive(int(item.name)) is False:
            item.unlink(missing_ok=True)
            continue
        try:
            total += max(0, int(item.read_text().strip() or 0))
        except (OSError, ValueError):
            pass
    return total


def _claim(n: int) -> None:
    """Record this process's thread count (removed at exit; a dead process's claim is ignored)."""
    try:
        folder = _claims_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / str(os.getpid())
        replace_file(path, str(n))
        if not _CHOSEN.get("atexit"):
            atexit.register(lambda: path.unlink(missing_ok=True))
            _CHOSEN["atexit"] = True
    except OSError:
        pass  # a read-only temp dir: the measured load alone decides


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def _read_stat(path: str = "/proc/stat") -> tuple[float, float, int] | None:
    """(all jiffies, idle jiffies, CPUs) from the kernel's first ``cpu`` line, or None where
    there is no such file (macOS, Windows) or it reads oddly."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
        head = lines[0].split()
        cpus = sum(1 for line in lines if re.match(r"cpu[0-9]+ ", line))
        values = [float(x) for x in head[1:]]
        if head[0] != "cpu" or len(values) < 4 or cpus < 1:
            return None
        idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
        return sum(values[:8]), idle, cpus
    except (OSError, ValueError, IndexError):
        return None


# the previous (wall time, jiffies, idle jiffies, this process's CPU seconds) sample
_STAT: dict[str, tuple[float, float, float, float]] = {}


def _busy_from_stat(window: float = 0.2) -> float | None:
    """Cores busy with other processes' work, from the kernel's CPU counters: the busy share
    since this process's previous sample (when it is 0.2-30 s old; else over ``window``
    seconds from now), less this process's own CPU time over the same interval. Unlike the
    1-minute load average, it neither counts this process's own start-up (imports, preflight)
    nor a job that ended a minute ago. None where the counters cannot be read."""
    def sample():
        got = _read_stat()
        return None if got is None else (time.monotonic(), got[0], got[1], time.process_time(),
                                         got[2])

    now = sample()
    if now is None:
        return None
    before = _STAT.get("last")
    if before is None or not 0.2 <= now[0] - before[0] <= 30.0:
        before = now
        time.sleep(window)
        now = sample()
        if now is None:
            return None
    _STAT["last"] = now[:4]
    jiffies = now[1] - before[1]
    wall = now[0] - before[0]
    if jiffies <= 0 or wall <= 0:
        return None
    busy = (jiffies - (now[2] - before[2])) / jiffies * now[4]
    own = (now[3] - before[3]) / wall
    return max(0.0, busy - own)


def busy_elsewhere(own_threads: float = 0.0) -> tuple[float, str]:
    """Cores other work keeps busy now, and how that was measured (for the log): the kernel's
    CPU counters less this process's own use where the platform has them
    (``_busy_from_stat``), else the 1-minute load average less ``own_threads``."""
    busy = _busy_from_stat()
    if busy is not None:
        return busy, f"{busy:.1f} cores busy elsewhere"
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0, "no load measure on this platform"
    return max(0.0, load - own_threads), f"1-minute load {load:.1f}"


def free_cores() -> int:
    """Usable cores minus the ones other work keeps busy (``busy_elsewhere``), or the threads
    other toymech processes claimed if that is more (they may have just started), at least
    1."""
    cores = usable_cores()
    busy = max(busy_elsewhere()[0], claimed_by_others())
    return max(1, min(cores, int(cores - busy + 0.5)))


def choose_threads(threads: int | None = None, jobs: int = 1) -> int:
    """Torch CPU threads for one of ``jobs`` processes: ``threads`` if given, else
    ``$TOYMECH_THREADS`` (a number; ``torch``: torch's own count, left as it is), else
    ``free_cores() // jobs`` (at least 1)."""
    check(isinstance(jobs, int) and not isinstance(jobs, bool) and jobs >= 1, "jobs", jobs,
          "an integer >= 1")
    if threads is None and _keeps_torch():
        return torch.get_num_threads()
    if threads is None and os.environ.get("TOYMECH_THREADS"):
        raw = os.environ["TOYMECH_THREADS"]
        check(re.fullmatch(r"[0-9]{1,4}", raw) is not None and 1 <= int(raw) <= 4096,
              "TOYMECH_THREADS", raw, f"an integer in 1..4096 (ASCII digits), or {KEEP_TORCH!r} "
              "(leave torch's own count)")
        threads = int(raw)
    if threads is not None:
        check(isinstance(threads, int) and not isinstance(threads, bool)
              and 1 <= threads <= 4096, "threads", threads, "None (automatic) or an integer >= 1")
        return threads
    return max(1, free_cores() // jobs)


def apply_threads(threads: int | None = None, jobs: int = 1, log=print) -> int:
    """Set torch's CPU threads by ``choose_threads`` and say so once per process. The choice
    stays automatic (``rebalance`` may change it) unless ``threads`` or ``$TOYMECH_THREADS``
    asked for a number; ``TOYMECH_THREADS_AUTO=1`` marks a ``$TOYMECH_THREADS`` that was itself
    an automatic choice (``toymech report`` passes each notebook its share that way);
    ``TOYMECH_THREADS=torch`` sets nothing (torch's own count, kept as an explicit choice).
    ``jobs``: the processes the job starts, which share the free cores; ``log``: a print-like
    function for the line (None: quiet). Returns the threads in use."""
    n = choose_threads(threads, jobs)
    if threads is None and _keeps_torch():  # the user asked toymech to leave torch's count
        return _keep(n, log, f"torch's own: TOYMECH_THREADS={KEEP_TORCH}")
    torch.set_num_threads(n)
    from_env = bool(os.environ.get("TOYMECH_THREADS")) and threads is None
    auto_env = from_env and os.environ.get("TOYMECH_THREADS_AUTO") == "1"
    if log and _CHOSEN.get("threads") != n:
        how = ("as asked" if threads is not None or (from_env and not auto_env) else
               "automatic: this notebook's share of the report's cores" if auto_env else
               f"automatic: {free_cores()} of {usable_cores()} cores free, {jobs} process(es)")
        log(f"[toymech] torch CPU threads: {n} ({how})")
    _CHOSEN["threads"] = _CHOSEN["initial"] = n
    explicit = threads is not None or (from_env and not auto_env)
    _CHOSEN["auto_jobs"] = None if explicit else jobs
    _claim(n)
    return n


def _keeps_torch() -> bool:
    return os.environ.get("TOYMECH_THREADS", "").strip().lower() == KEEP_TORCH


def _keep(n: int, log, why: str) -> int:
    """Take torch's current ``n`` threads as this process's explicit choice (never changed by
    ``rebalance``), saying so once."""
    if log and _CHOSEN.get("threads") != n:
        log(f"[toymech] torch CPU threads: {n} ({why})")
    _CHOSEN["threads"] = _CHOSEN["initial"] = n
    _CHOSEN["auto_jobs"] = None
    _claim(n)
    return n


def use_thread_policy(device: str | torch.device = "cpu", log=print) -> int:
    """The thread policy where the library trains or measures (``Zoo.get_or_train`` and
    ``load``, ``training.train``, maps, the explorer), as ``toymech train`` applies it: on a
    CPU, the first such call of a process runs ``apply_threads()`` (``$TOYMECH_THREADS``, else
    the free cores), unless the process or its user chose already. A choice is the command
    line's ``--threads``, a notebook's ``threads``, an earlier ``apply_threads``,
    ``TOYMECH_THREADS=torch`` (leave torch's count), ``OMP_NUM_THREADS`` or
    ``MKL_NUM_THREADS`` in the environment, or a ``torch.set_num_threads(n)`` made after
    toymech was imported (a count other than torch's at that moment); each is kept, never
    fought. Another device (a GPU run) leaves the threads alone. ``device``: where the work
    runs (``"auto"``: CUDA, else MPS, else CPU); ``log``: a print-like function for the one
    line that says the choice (None: quiet). Returns torch's threads now."""
    if "threads" in _CHOSEN or resolve_device(device).type != "cpu":
        return torch.get_num_threads()
    current = torch.get_num_threads()
    if current != _TORCH_AT_IMPORT:
        return _keep(current, log, "as set with torch.set_num_threads")
    if not os.environ.get("TOYMECH_THREADS"):
        named = next((v for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if os.environ.get(v)),
                     None)
        if named is not None:
            return _keep(current, log, f"as ${named} asks")
    return apply_threads(None, log=log)


def initial_threads() -> int:
    """The thread count this process chose at the start (``apply_threads``), whatever
    ``rebalance`` did since; torch's current count if it never chose."""
    return int(_CHOSEN.get("initial") or torch.get_num_threads())


def rebalance(log=print) -> int:
    """Follow the free cores with an automatic thread choice (called at the loop's evaluation
    steps); explicit choices are kept. Returns the threads in use.

    Lowered when other toymech processes now claim the cores it took; with no other toymech
    process left, set to the cores other work leaves (``busy_elsewhere``): raised when the
    notebooks it shared the machine with have finished, lowered again when another job
    starts. A count set since with ``torch.set_num_threads`` becomes the process's explicit
    choice (kept from then on). ``log``: a print-like function for the line that says a change
    (None: quiet)."""
    jobs = _CHOSEN.get("auto_jobs")
    current = torch.get_num_threads()
    if jobs and current != _CHOSEN.get("threads"):  # the user's torch.set_num_threads since
        _keep(current, None, "")
        return current
    if not jobs:
        return current
    others = claimed_by_others()
    if others:
        n = min(current, max(1, (usable_cores() - others) // int(jobs)))
        why = f"other toymech processes now claim {others} of {usable_cores()} cores"
    else:
        busy, how = busy_elsewhere(own_threads=current)
        cores = usable_cores()
        n = max(1, min(cores, int(cores - busy + 0.5)))
        why = f"no other toymech process; {how} on {cores} cores"
    if n != current:
        torch.set_num_threads(n)
        _CHOSEN["threads"] = n
        _claim(n)
        if log:
            log(f"[toymech] torch CPU threads: {n} (automatic: {why})")
    return torch.get_num_threads()
