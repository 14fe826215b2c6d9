"""Kernel waits cut into slices (hedgekit.repro.kernel_channels): the slicing against a scripted socket, and a real
run of many Output-widget cells, the case that left nbclient's own client waiting for good, to its end."""
import asyncio
import subprocess
import sys
import textwrap
from queue import Empty

import pytest

from hedgekit.repro import kernel_channels
from hedgekit.repro.kernel_channels import sliced_get_msg, steady_kernel_manager, steady_notebook_client


class ScriptedSocket:
    """``get_msg(t)`` that stays empty for its first ``empty`` calls (sleeping ``t``, as a poll that runs out),
    then answers; records every ``t`` asked for."""

    def __init__(self, empty: int):
        self.empty, self.asked = empty, []

    async def get_msg(self, timeout):
        self.asked.append(timeout)
        if len(self.asked) <= self.empty:
            await asyncio.sleep(timeout)
            raise Empty
        return {"msg": len(self.asked)}


def test_a_wait_without_a_limit_polls_afresh_each_slice_until_the_message_is_read():
    sock = ScriptedSocket(empty=3)
    assert asyncio.run(sliced_get_msg(sock.get_msg, None, slice_s=0.01)) == {"msg": 4}
    assert sock.asked == [0.01] * 4


def test_a_wait_with_a_limit_keeps_it_and_ends_with_empty():
    sock = ScriptedSocket(empty=10 ** 6)
    with pytest.raises(Empty):
        asyncio.run(sliced_get_msg(sock.get_msg, 0.05, slice_s=0.02))
    assert all(0 <= t <= 0.02 for t in sock.asked)
    assert sum(sock.asked) == pytest.approx(0.05, abs=0.02)  # sliced, not lengthened or cut short
    sock = ScriptedSocket(empty=10 ** 6)
    with pytest.raises(Empty):
        asyncio.run(sliced_get_msg(sock.get_msg, 0, slice_s=1.0))
    assert sock.asked == [0.0]  # a poll with no wait stays one poll


def test_a_message_within_the_limit_is_returned():
    sock = ScriptedSocket(empty=2)
    assert asyncio.run(sliced_get_msg(sock.get_msg, 10.0, slice_s=0.01)) == {"msg": 3}


def test_the_kit_s_clients_and_managers_use_the_sliced_channels():
    client_class = kernel_channels.steady_client_class()
    track = []
    manager = steady_kernel_manager(track=track)()
    assert track == [manager]
    client = manager.client()
    assert isinstance(client, client_class)
    assert type(client.shell_channel).get_msg is type(client.iopub_channel).get_msg
    assert type(client.shell_channel).get_msg.__qualname__.startswith("steady_client_class.")
    assert steady_notebook_client()(None).kernel_manager_class.client_factory.default_value is client_class


@pytest.mark.slow
def test_a_run_of_many_output_widget_cells_ends(tmp_path):
    """100 cells that each fill an ipywidgets Output: nbclient's own client, waiting without a timeout, stopped for
    good in every one of five such runs here (kernel idle, reply unread); the kit's client runs them to the end. A
    subprocess, so that a wait that never ends fails this test at its limit instead of stopping the suite."""
    script = textwrap.dedent("""
        import nbformat
        from hedgekit.repro.kernel_channels import steady_notebook_client
        nb = nbformat.v4.new_notebook()
        nb.cells.append(nbformat.v4.new_code_cell("import ipywidgets as W\\nfrom IPython.display import display"))
        for i in range(100):
            nb.cells.append(nbformat.v4.new_code_cell(
                "out = W.Output()\\nout.clear_output(wait=True)\\nwith out:\\n"
                f"    display({{'text/plain': 'cell {i}'}}, raw=True)\\nW.VBox([W.ToggleButtons(options=['a']), out])"))
        steady_notebook_client()(nb, timeout=None, kernel_name="python3").execute()
        shown = [c.outputs[0]["data"]["application/vnd.jupyter.widget-view+json"] for c in nb.cells[1:]]
        print(len(shown))
    """)
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("a run of 100 Output-widget cells did not end within 300 s: a kernel wait was never woken")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "100"
