import pytest
import torch

from toymech import devices


@pytest.fixture(autouse=True)
def private_claims(monkeypatch, tmp_path):
    """Thread claims of toymech processes running elsewhere on this machine stay out."""
    monkeypatch.setattr(devices, "_claims_dir", lambda: tmp_path / "claims")


def test_explicit_threads_win_and_are_checked(monkeypatch):
    monkeypatch.setenv("TOYMECH_THREADS", "3")
    assert devices.choose_threads(2) == 2
    assert devices.choose_threads() == 3
    monkeypatch.setenv("TOYMECH_THREADS", "many")
    with pytest.raises(ValueError, match="TOYMECH_THREADS='many'"):
        devices.choose_threads()
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match="threads="):
            devices.choose_threads(bad)
    with pytest.raises(ValueError, match="jobs=0"):
        devices.choose_threads(None, jobs=0)


def test_automatic_threads_divide_the_free_cores(monkeypatch):
    monkeypatch.delenv("TOYMECH_THREADS", raising=False)
    monkeypatch.setattr(devices, "usable_cores", lambda: 8)
    monkeypatch.setattr(devices, "_busy_from_stat", lambda: None)  # the load-average path
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (3.0, 0.0, 0.0))
    assert devices.free_cores() == 5
    assert devices.choose_threads() == 5
    assert devices.choose_threads(jobs=2) == 2
    assert devices.choose_threads(jobs=9) == 1  # never zero
    monkeypatch.setattr(devices, "_busy_from_stat", lambda: None)  # the load-average path
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (20.0, 0.0, 0.0))
    assert devices.choose_threads() == 1  # a machine busier than its cores: one thread


def test_apply_threads_sets_torch_and_says_so_once(monkeypatch):
    monkeypatch.setattr(devices, "_CHOSEN", {})  # as in a fresh process
    before = torch.get_num_threads()
    lines = []
    try:
        assert devices.apply_threads(1, log=lines.append) == 1
        assert torch.get_num_threads() == 1
        devices.apply_threads(1, log=lines.append)
        assert len(lines) == 1 and "threads: 1 (as asked)" in lines[0]
    finally:
        torch.set_num_threads(before)


def test_other_toymech_processes_count_as_busy_and_an_automatic_choice_gives_way(
        monkeypatch, tmp_path):
    """A sibling's claim (a live pid: our parent) takes its cores even before the load average
    shows it; a dead process's claim is removed; ``rebalance`` lowers an automatic choice when a
    sibling appears, never an explicit one."""
    import os

    monkeypatch.setattr(devices, "_CHOSEN", {})
    tmp_path = tmp_path / "claims"
    monkeypatch.delenv("TOYMECH_THREADS", raising=False)
    monkeypatch.setattr(devices, "usable_cores", lambda: 2)
    monkeypatch.setattr(devices, "_busy_from_stat", lambda: None)  # the load-average path
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    before = torch.get_num_threads()
    try:
        assert devices.apply_threads(log=None) == 2  # alone on a quiet machine: both cores
        assert (tmp_path / str(os.getpid())).read_text() == "2"
        (tmp_path / "999999999").write_text("2")  # a process that no longer exists
        assert devices.claimed_by_others() == 0 and not (tmp_path / "999999999").exists()
        assert devices.rebalance(log=None) == 2
        (tmp_path / str(os.getppid())).write_text("1")  # a sibling starts with one thread
        assert devices.free_cores() == 1 and devices.choose_threads() == 1
        lines = []
        assert devices.rebalance(log=lines.append) == 1 and torch.get_num_threads() == 1
        assert "other toymech processes now claim 1 of 2 cores" in lines[0]
        assert (tmp_path / str(os.getpid())).read_text() == "1"
        devices.apply_threads(2, log=None)  # explicit: kept whatever the siblings do
        assert devices.rebalance(log=None) == 2
    finally:
        torch.set_num_threads(before)


def test_an_automatic_choice_takes_the_cores_its_siblings_left_and_gives_them_back(
        monkeypatch, tmp_path):
    """The report's share (``TOYMECH_THREADS`` marked ``TOYMECH_THREADS_AUTO=1``) stays
    automatic: raised once no other toymech process claims cores and the load average shows
    them idle, lowered again when a foreign job loads the machine; a user's own
    ``TOYMECH_THREADS`` never moves."""
    import os

    monkeypatch.setattr(devices, "_CHOSEN", {})
    monkeypatch.setattr(devices, "usable_cores", lambda: 2)
    load = [2.9]  # three notebooks were running on two cores
    monkeypatch.setattr(devices, "_busy_from_stat", lambda: None)  # the load-average path
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (load[0], 0.0, 0.0))
    monkeypatch.setenv("TOYMECH_THREADS", "1")
    monkeypatch.setenv("TOYMECH_THREADS_AUTO", "1")
    claims = tmp_path / "claims"
    before = torch.get_num_threads()
    try:
        lines = []
        assert devices.apply_threads(log=lines.append) == 1 and "report's cores" in lines[0]
        (claims / str(os.getppid())).write_text("1")  # a sibling notebook still runs
        load[0] = 1.0
        assert devices.rebalance(log=None) == 1  # its claim holds the other core
        (claims / str(os.getppid())).unlink()  # it finished, the load average still sees it
        load[0] = 1.8
        assert devices.rebalance(log=None) == 1
        load[0] = 1.1  # now only this process is busy
        assert devices.rebalance(log=lines.append) == 2 and torch.get_num_threads() == 2
        assert "1-minute load 1.1 on 2 cores" in lines[-1]
        assert (claims / str(os.getpid())).read_text() == "2"
        assert devices.initial_threads() == 1  # what the grids size their workers by
        load[0] = 3.0  # a foreign job started beside our two threads
        assert devices.rebalance(log=None) == 1
        monkeypatch.delenv("TOYMECH_THREADS_AUTO")  # the user's own number: kept
        devices.apply_threads(log=None)
        load[0] = 0.5
        assert devices.rebalance(log=None) == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("bad", ["auto:7", "cpu:-1", "cpu:0", "cuda:x", "cuda:-1", "CPU", "", " cpu",
                                 "cuda:\u0661", "mps:0", "tpu", 5, None, "cuda:1234"])
def test_one_device_check_refuses_every_malformed_string(bad):
    with pytest.raises(ValueError, match="device=.* is not allowed: one of auto, cpu, cuda, cuda:N"):
        devices.check_device(bad)


def test_device_strings_that_are_allowed():
    for good in ("auto", "cpu", "cuda", "cuda:0", "cuda:12", "mps"):
        assert devices.check_device(good) == good
    assert devices.resolve_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cuda:0' is not available here"):
            devices.resolve_device("cuda:0")


def test_process_liveness_is_written_once_and_tells_dead_zombie_and_reused_pids():
    import os
    import subprocess
    import sys

    from toymech.training import atomic
    from toymech.zoo import locks

    # the zoo's locks and leftovers and the thread claims ask the same function
    assert locks.process_alive is devices.process_alive is atomic.process_alive
    assert devices.process_alive(os.getpid()) is True
    assert devices.process_alive(2**22 + 99) is False and devices.process_alive(0) is False
    assert devices.process_alive(os.getpid(), host="elsewhere") is None
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while devices.process_start(child.pid) is not None:  # exited, not yet reaped: a zombie
        if child.poll() is not None:
            break
    assert devices.process_alive(child.pid) is False
    child.wait()


def test_thread_counts_from_the_environment_are_ascii(monkeypatch):
    for raw in ("\u0662", "1_0", "+2", "0", "5000"):
        monkeypatch.setenv("TOYMECH_THREADS", raw)
        with pytest.raises(ValueError, match="TOYMECH_THREADS="):
            devices.choose_threads()


def test_busy_elsewhere_leaves_out_this_process_own_work(monkeypatch):
    """The kernel's counters less this process's CPU time: a process that was busy itself (its
    imports, a preflight) still sees both cores free, and a foreign job is seen at once (the
    1-minute load average counts the first and misses the second)."""
    clock, cpu, stat = [0.0], [0.0], [(0.0, 0.0, 2)]
    monkeypatch.setattr(devices, "_STAT", {})
    monkeypatch.setattr(devices, "_read_stat", lambda path="/proc/stat": stat[0])
    monkeypatch.setattr(devices.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(devices.time, "process_time", lambda: cpu[0])
    monkeypatch.setattr(devices, "usable_cores", lambda: 2)
    monkeypatch.setattr(devices, "claimed_by_others", lambda: 0)

    def sleep(s):  # during the first window this process keeps one core busy, nothing else
        clock[0] += s
        cpu[0] += s
        stat[0] = (stat[0][0] + 200 * s, stat[0][1] + 100 * s, 2)

    monkeypatch.setattr(devices.time, "sleep", sleep)
    busy, how = devices.busy_elsewhere()
    assert busy == pytest.approx(0.0) and "busy elsewhere" in how
    clock[0] += 2.0  # then a foreign job takes both cores while this process idles
    stat[0] = (stat[0][0] + 400, stat[0][1], 2)
    assert devices.busy_elsewhere()[0] == pytest.approx(2.0)
    clock[0] += 1.0  # one core each: this process's and the foreign job's
    cpu[0] += 1.0
    stat[0] = (stat[0][0] + 200, stat[0][1], 2)
    assert devices.busy_elsewhere()[0] == pytest.approx(1.0)
    monkeypatch.setattr(devices, "_read_stat", lambda path="/proc/stat": None)
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (1.5, 0.0, 0.0))
    assert devices.busy_elsewhere(own_threads=1) == (0.5, "1-minute load 1.5")
    monkeypatch.setattr(devices, "busy_elsewhere", lambda own_threads=0.0: (1.6, ""))
    assert devices.free_cores() == 1  # never below one


def test_the_kernel_counters_parse(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 50 800 45 0 0 0 0 0\ncpu0 50 2 25 400 20 0 0 0 0 0\n"
                    "cpu1 50 3 25 400 25 0 0 0 0 0\nintr 1\n")
    assert devices._read_stat(str(stat)) == (1000.0, 845.0, 2)
    stat.write_text("garbage\n")
    assert devices._read_stat(str(stat)) is None
    assert devices._read_stat(str(tmp_path / "absent")) is None


@pytest.fixture
def fresh_process(monkeypatch):
    """The thread state of a process that has chosen nothing yet, on 3 quiet usable cores, with
    torch at 2 threads as it was when toymech was imported; torch's count restored after."""
    before = torch.get_num_threads()
    for name in ("TOYMECH_THREADS", "TOYMECH_THREADS_AUTO", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(devices, "_CHOSEN", {})
    monkeypatch.setattr(devices, "usable_cores", lambda: 3)
    monkeypatch.setattr(devices, "busy_elsewhere", lambda own_threads=0.0: (0.0, "quiet (test)"))
    torch.set_num_threads(2)
    monkeypatch.setattr(devices, "_TORCH_AT_IMPORT", 2)
    yield
    torch.set_num_threads(before)


def test_the_library_applies_the_policy_once_on_a_cpu(fresh_process):
    """The first library call on a CPU sets the policy's threads (the free cores, as ``toymech
    train`` does) and says so once; a later call changes nothing."""
    lines = []
    assert devices.use_thread_policy("cpu", log=lines.append) == 3
    assert torch.get_num_threads() == 3
    assert len(lines) == 1 and "torch CPU threads: 3 (automatic: 3 of 3 cores free" in lines[0]
    torch.set_num_threads(1)  # the user's own choice after the policy's: kept from now on
    assert devices.use_thread_policy("cpu", log=lines.append) == 1
    assert devices.rebalance(log=lines.append) == 1 and torch.get_num_threads() == 1
    assert len(lines) == 1


def test_the_library_keeps_a_users_choice_and_leaves_a_gpu_run_alone(fresh_process, monkeypatch):
    lines = []
    assert devices.use_thread_policy(torch.device("meta"), log=lines.append) == 2  # not a CPU
    assert torch.get_num_threads() == 2 and not lines and "threads" not in devices._CHOSEN
    torch.set_num_threads(1)  # torch.set_num_threads after importing toymech
    assert devices.use_thread_policy("cpu", log=lines.append) == 1
    assert "as set with torch.set_num_threads" in lines[0]
    assert devices.rebalance(log=None) == 1  # explicit: never moved
    monkeypatch.setattr(devices, "_CHOSEN", {})
    torch.set_num_threads(2)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert devices.use_thread_policy("cpu", log=lines.append) == 2
    assert "as $OMP_NUM_THREADS asks" in lines[-1] and devices.rebalance(log=None) == 2


def test_toymech_threads_torch_opts_out_everywhere(fresh_process, monkeypatch):
    """``TOYMECH_THREADS=torch``: neither the library nor the command line's ``apply_threads``
    sets a count; a number asked for (``--threads``) still wins."""
    monkeypatch.setenv("TOYMECH_THREADS", "torch")
    lines = []
    assert devices.choose_threads() == 2
    assert devices.use_thread_policy("cpu", log=lines.append) == 2
    assert devices.apply_threads(log=lines.append) == 2 and torch.get_num_threads() == 2
    assert lines == ["[toymech] torch CPU threads: 2 (torch's own: TOYMECH_THREADS=torch)"]
    assert devices.rebalance(log=None) == 2
    assert devices.apply_threads(1, log=None) == 1 and torch.get_num_threads() == 1
    monkeypatch.setenv("TOYMECH_THREADS", "torchy")
    with pytest.raises(ValueError, match="TOYMECH_THREADS='torchy' is not allowed: an integer"):
        devices.choose_threads()


def test_training_through_the_zoo_runs_on_the_policys_threads(fresh_process, tmp_path,
                                                              monkeypatch):
    """``Zoo.get_or_train`` from plain Python (no command line, no notebook) trains on the
    policy's threads: 3 here, where torch had 2."""
    from toymech import experiments
    from toymech.training import loop
    from toymech.zoo import Zoo

    seen, update = [], loop._update
    monkeypatch.setattr(loop, "_update", lambda lp, step: (seen.append(torch.get_num_threads()),
                                                          update(lp, step))[1])
    exp = experiments.get("induction-2l", "smoke", 0)
    Zoo(tmp_path / "zoo").get_or_train(exp, device="cpu", progress=False, log=None)
    assert seen and set(seen) == {3}
