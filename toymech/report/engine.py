"""How ``toymech report`` runs its notebooks' kernels: a papermill engine (nbclient's, unchanged)
that also calls ``on_cell(cell_index, cells)`` as each cell starts, with the cells being executed
(papermill's injected-parameters cell included, so the index and the cells agree), so the caller
knows where every kernel is; ``kernel_manager``, which starts a kernel with values of its own
in its environment and passes its stderr on; ``quiet_kernels_on_interrupt``: after Ctrl-C a
kernel shut down mid-reply prints no traceback, so the command ends on one line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

from papermill.engines import NBClientEngine, papermill_engines

ENGINE = "toymech-progress"


class _ProgressEngine(NBClientEngine):
    """nbclient's engine; with ``toymech_on_cell``, that callback hears each cell start."""

    @classmethod
    def execute_managed_notebook(cls, nb_man, kernel_name, toymech_on_cell=None, **kwargs):
        if toymech_on_cell is not None:
            started = nb_man.cell_start

            def cell_start(cell, cell_index=None, **kw):
                started(cell, cell_index, **kw)
                try:
                    toymech_on_cell(cell_index, nb_man.nb.cells)
                except Exception:
                    pass

            nb_man.cell_start = cell_start
        return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)


papermill_engines.register(ENGINE, _ProgressEngine)


# Set once the user interrupts a report (Ctrl-C): the kernels' stderr is no longer passed on,
# so the interrupted run ends on one line, not on the traceback of a kernel shut down mid-reply.
KERNELS_QUIET = threading.Event()


def _pass_on(stream) -> None:
    """Copy a kernel's stderr to this process's (file descriptor 2, where it went before) until
    it closes; dropped once ``KERNELS_QUIET`` is set."""
    with stream:
        for line in iter(stream.readline, b""):
            if not KERNELS_QUIET.is_set():
                try:
                    os.write(2, line)
                except OSError:
                    pass


@contextlib.contextmanager
def quiet_kernels_on_interrupt():
    """Ctrl-C stops the report with one line (``cli``): from the interrupt on, the kernels'
    stderr (a kernel shut down mid-reply prints a traceback) is not passed on."""
    KERNELS_QUIET.clear()
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield  # (SIGINT ignored, as in a background job: left so)
        return

    def interrupted(signum, frame):
        KERNELS_QUIET.set()
        if callable(previous):
            previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def kernel_manager(env: dict[str, str]):
    """A kernel manager class (nbclient's default, ``AsyncKernelManager``) whose kernel starts
    with ``env`` added to this process's environment: how one notebook's kernel, among several
    started by this process at once, gets a value of its own (its ``$TOYMECH_LIVE`` folder).
    Its stderr is passed on through ``_pass_on`` (silenced after an interrupt)."""
    import subprocess

    from jupyter_client import AsyncKernelManager

    extra = {str(k): str(v) for k, v in env.items()}

    class _KernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw):
            kw["env"] = {**os.environ, **(kw.get("env") or {}), **extra}
            kw["stderr"] = subprocess.PIPE
            started = await super().start_kernel(**kw)
            process = getattr(self.provisioner, "process", None)
            if getattr(process, "stderr", None) is not None:
                threading.Thread(target=_pass_on, args=(process.stderr,), daemon=True,
                                 name="toymech-kernel-stderr").start()
            return started

    return _KernelManager


__all__ = ["ENGINE", "KERNELS_QUIET", "kernel_manager", "quiet_kernels_on_interrupt"]
