"""Kernel clients that find a reply even when its wake-up is lost: every notebook run of the kit uses them.

Seen here: a Run All stopped for good at a widget cell (an ipywidgets ``Output`` filled with ``with out:``). The
kernel had run the cell and sat idle; the client waited, without a timeout, on the shell socket for a reply that
never came. nbclient answers such a widget by *sending* on that shell socket (the widget's new state) from the task
that reads IOPub while another task awaits the reply on the same socket. Our hypothesis: ZeroMQ signals a
socket's readiness by an edge, the send consumes the edge of a reply that has just come in, and the waiting task
is never woken. A wait without a timeout never looks at the socket again; one with a timeout does, once, when it
runs out (``poll(0)``). So each wait here is cut into slices of `SLICE_S` seconds, and the socket is polled afresh
after each: a stranded reply is read within a slice, and a wait's own timeout, if any, is kept as it was.

`steady_kernel_manager` gives the kernel manager class to pass to nbclient or papermill (``kernel_manager_class``);
`steady_notebook_client` gives nbclient's ``NotebookClient`` with that manager as its default.
"""
from __future__ import annotations

import functools
import time

SLICE_S = 1.0  # seconds a wait on a kernel socket lasts before the socket is polled afresh


async def sliced_get_msg(get_msg, timeout: float | None, slice_s: float = SLICE_S):
    """``await get_msg(t)`` for slices ``t`` <= ``slice_s`` until it returns a message, or until ``timeout``
    seconds (None: no limit) have passed, when the last slice's ``queue.Empty`` is raised."""
    from queue import Empty

    deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
    while True:
        left = slice_s if deadline is None else min(slice_s, max(0.0, deadline - time.monotonic()))
        try:
            return await get_msg(left)
        except Empty:
            if deadline is not None and time.monotonic() >= deadline:
                raise


@functools.lru_cache(maxsize=None)
def steady_client_class():
    """jupyter_client's ``AsyncKernelClient`` whose shell and IOPub channels wait in slices (`sliced_get_msg`)."""
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.channels import AsyncZMQSocketChannel
    from traitlets import Type

    class SteadyChannel(AsyncZMQSocketChannel):
        async def get_msg(self, timeout: float | None = None):
            return await sliced_get_msg(super().get_msg, timeout)

    class SteadyKernelClient(AsyncKernelClient):
        shell_channel_class = Type(SteadyChannel)
        iopub_channel_class = Type(SteadyChannel)

    return SteadyKernelClient


def steady_kernel_manager(track: list | None = None):
    """An ``AsyncKernelManager`` class whose clients are `steady_client_class`'s; with ``track``, each instance is
    also appended to that list (so that a caller can end the kernels it started)."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import Type

    class SteadyKernelManager(AsyncKernelManager):
        client_factory = Type(steady_client_class(), klass="jupyter_client.asynchronous.AsyncKernelClient")

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            if track is not None:
                track.append(self)

    return SteadyKernelManager


@functools.lru_cache(maxsize=None)
def steady_notebook_client():
    """nbclient's ``NotebookClient`` whose default kernel manager is `steady_kernel_manager`'s."""
    from nbclient import NotebookClient
    from traitlets import default

    class SteadyNotebookClient(NotebookClient):
        @default("kernel_manager_class")
        def _steady_manager(self):
            return steady_kernel_manager()

    return SteadyNotebookClient
