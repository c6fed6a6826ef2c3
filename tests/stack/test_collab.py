"""Live co-editing against the live stack: real pycrdt clients over real WebSockets.

The web tier as `make run` starts it (webapp/serve.py: uvicorn for /ws/, the Redis pub/sub
channel layer, a SQLite file or PostgreSQL with DATABASE_URL). Each test makes its own graph.

- two editors converge; two concurrent adds of the same op get two distinct ids;
- a delete against a concurrent parameter edit converges the same everywhere, node deleted;
- a late joiner gets everything without anyone saving;
- a viewer's (and a read-scope token's) update is refused and not stored; another team's user
  is closed with 4403, no credentials with 4401;
- a server restart between edits loses nothing;
- "save revision" stores a revision whose spec is the derived spec;
- two server processes share a room through the channel layer.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from tests.collab_support.ws import Editor
from tests.stack.stack import ROOT, ServiceStack, free_port, wait_for_port

pytestmark = pytest.mark.slow

SPEC = {
    "version": 1,
    "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [
        {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
        {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
        {"id": "fc2", "op": "Linear", "params": {"out_features": 3}, "inputs": ["act"]},
    ],
    "outputs": ["fc2"],
    "layout": {
        "x": {"x": 0, "y": 0},
        "fc1": {"x": 0, "y": 100},
        "act": {"x": 0, "y": 200},
        "fc2": {"x": 0, "y": 300},
    },
}


def new_graph(stack: ServiceStack, name: str) -> int:
    made = stack.api("a").post(
        "/api/graphs/", json={"team": stack.world["a"]["team"], "name": name, "spec": SPEC}
    )
    assert made.status_code == 201, made.text
    return made.json()["id"]


def room(
    stack: ServiceStack, graph_id: int, *, port: int | None = None, slash: bool = False
) -> str:
    return f"ws://127.0.0.1:{port or stack.port}/ws/graphs/{graph_id}/collab" + (
        "/" if slash else ""
    )


def editor(
    stack: ServiceStack, graph_id: int, who: str | None, name: str = "", **kw: Any
) -> Editor:
    return Editor(room(stack, graph_id, **kw), stack.token(who) if who else None, name or str(who))


def same_everywhere(*editors: Editor) -> Any:
    first = editors[0].client.json()
    return lambda: all(e.client.json() == first for e in editors[1:])


async def converge(*editors: Editor, timeout: float = 15.0) -> dict[str, Any]:
    """Wait until every editor holds the same document; that document's JSON."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        docs = [e.client.json() for e in editors]
        if all(d == docs[0] for d in docs[1:]):
            return docs[0]
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(
                f"not converged in {timeout}s: {[sorted(d['nodes']) for d in docs]}"
            )
        await asyncio.sleep(0.05)


def test_editors_converge_concurrent_adds_get_distinct_ids_and_a_late_joiner_sees_all(
    stack: ServiceStack,
) -> None:
    graph = new_graph(stack, "collab converge")

    async def scenario() -> tuple[dict[str, Any], list[str], dict[str, Any]]:
        async with (
            editor(stack, graph, "a", "one") as one,
            editor(stack, graph, "a", "two", slash=True) as two,
        ):
            await one.synced()
            await two.synced()
            assert (
                "fc1" in one.client.roots["nodes"] and "fc1" in two.client.roots["nodes"]
            )  # seeded once
            # Both add a ReLU after fc2 at the same moment.
            added = await asyncio.gather(
                one.add_node("ReLU", source="fc2"), two.add_node("ReLU", source="fc2")
            )
            doc = await converge(one, two)
        async with editor(stack, graph, "a", "late") as late:  # nobody saved
            await late.until(lambda: all(i in late.client.roots["nodes"] for i in added))
            return doc, added, late.client.json()

    doc, added, late = asyncio.run(scenario())
    assert len(set(added)) == 2 and all(i.startswith("relu_1_") for i in added)
    assert set(added) <= set(doc["nodes"])
    assert late == doc


def test_delete_against_a_param_edit_converges_with_the_node_deleted(stack: ServiceStack) -> None:
    graph = new_graph(stack, "collab delete vs edit")

    async def scenario() -> list[dict[str, Any]]:
        async with editor(stack, graph, "a", "one") as one, editor(stack, graph, "a", "two") as two:
            await one.synced()
            await two.synced()
            # Both change their copy before either hears of the other's change, then both send.
            await one.delete_node("act", send=False)
            await two.set_param("act", "inplace", True, send=False)
            # ... and both set fc1's width: one value wins, the same for everyone.
            await one.set_param("fc1", "out_features", 64, send=False)
            await two.set_param("fc1", "out_features", 128, send=False)
            await asyncio.gather(one.client.flush(), two.client.flush())
            doc = await converge(one, two)
            async with editor(stack, graph, "a", "three") as three:
                await three.synced()
                await three.until(lambda: three.client.json() == doc)
                return [doc, three.client.json(), one.client.spec()]

    doc, late, spec = asyncio.run(scenario())
    assert doc == late
    assert "act" not in doc["nodes"] and all(e["target"] != "act" for e in doc["edges"].values())
    assert [n["id"] for n in spec["nodes"]] == ["fc1", "fc2"]
    assert doc["nodes"]["fc1"]["params"]["out_features"] in (64, 128)
    stored = stack.api("a").get(f"/api/graphs/{graph}/collab/").json()["spec"]
    assert stored == spec


def test_read_only_updates_are_refused_and_strangers_are_closed(stack: ServiceStack) -> None:
    graph = new_graph(stack, "collab refusals")
    made = stack.api("a").post("/api/auth/tokens/", json={"name": "read", "scope": "read"})
    assert made.status_code == 201, made.text
    read_token = made.json()["token"]

    async def scenario() -> tuple[list[str], list[str], int | None, int | None, dict[str, Any]]:
        url = room(stack, graph)
        async with (
            editor(stack, graph, "a", "editor") as ed,
            editor(stack, graph, "viewer_a", "viewer") as viewer,
            Editor(url, read_token, "read token") as reader,
        ):
            for e in (ed, viewer, reader):
                await e.synced()
            # Presence from a viewer is allowed: the editor sees it, and sees it go.
            await viewer.client.set_presence(
                {"user": {"id": 3, "username": "viewer_a", "color": "#0a0"}}
            )
            viewer_id = viewer.client.doc.client_id
            await ed.until(
                lambda: (
                    ed.client.awareness.states.get(viewer_id, {}).get("user", {}).get("username")
                    == "viewer_a"
                )
            )
            await viewer.add_node("ReLU", source="fc2")
            await reader.add_node("Sigmoid", source="fc2")
            await viewer.until(lambda: viewer.client.denied)
            await reader.until(lambda: reader.client.denied)
            await ed.add_node("Tanh", source="fc2")  # the room goes on
            await viewer.until(
                lambda: any(n.startswith("tanh_") for n in viewer.client.roots["nodes"])
            )
            editor_doc = ed.client.json()
            await reader.__aexit__(None, None, None)
            await viewer.__aexit__(None, None, None)
            await ed.until(lambda: viewer_id not in ed.client.awareness.states)
        async with editor(stack, graph, "b", "stranger") as stranger:
            await stranger.closed.wait()
        async with editor(stack, graph, None, "nobody") as nobody:
            await nobody.closed.wait()
        return (
            viewer.client.denied,
            reader.client.denied,
            stranger.closed_code,
            nobody.closed_code,
            editor_doc,
        )

    denied_viewer, denied_reader, stranger, nobody, editor_doc = asyncio.run(scenario())
    assert denied_viewer == ["read-only"] and denied_reader == ["read-only"]
    assert stranger == 4403 and nobody == 4401
    assert not any(n.startswith(("relu_", "sigmoid_")) for n in editor_doc["nodes"])
    state = stack.api("a").get(f"/api/graphs/{graph}/collab/").json()
    assert state["updates"] == 1  # the editor's Tanh only
    assert [n["op"] for n in state["spec"]["nodes"]] == ["Linear", "ReLU", "Linear", "Tanh"]


def test_a_server_restart_between_edits_loses_nothing_and_save_stores_the_derived_spec(
    stack: ServiceStack,
) -> None:
    graph = new_graph(stack, "collab restart")

    async def before() -> dict[str, Any]:
        async with editor(stack, graph, "a", "one") as one:
            await one.synced()
            fc = await one.add_node("Linear", {"out_features": 8}, source="fc2", x=40, y=400)
            await one.set_param("fc1", "out_features", 32)
            # Stored before broadcast: another socket seeing the edit means the database has it.
            async with editor(stack, graph, "a", "watch") as watch:
                await watch.until(
                    lambda: (
                        fc in watch.client.roots["nodes"]
                        and watch.client.roots["nodes"]["fc1"]["params"]["out_features"] == 32
                    )
                )
            return one.client.json()

    doc = asyncio.run(before())
    stack.start_web()  # stop the server process, start a new one

    async def after() -> tuple[dict[str, Any], dict[str, Any]]:
        async with editor(stack, graph, "a", "again") as again:
            await again.synced()
            restored = again.client.json()
            await again.add_node(
                "Softmax",
                {"dim": -1},
                source=next(n for n in again.client.roots["nodes"] if n.startswith("linear_")),
            )
            await asyncio.sleep(0.5)
            return restored, again.client.spec()

    restored, spec = asyncio.run(after())
    assert restored == doc
    state = stack.api("a").get(f"/api/graphs/{graph}/collab/").json()
    assert state["spec"] == spec
    saved = stack.api("a").post(
        f"/api/graphs/{graph}/collab/save/", json={"message": "after the restart"}
    )
    assert saved.status_code == 201, saved.text
    revision = saved.json()
    from webapp.graphs.services import check_spec

    assert revision["spec"] == check_spec(spec)[0]  # the derived spec, as every save stores it
    assert revision["number"] == 2 and revision["valid"] is True, revision
    assert (
        stack.api("viewer_a").post(f"/api/graphs/{graph}/collab/save/", json={}).status_code == 403
    )


def test_two_server_processes_share_a_room(stack: ServiceStack) -> None:
    graph = new_graph(stack, "collab two processes")
    port = free_port()
    other = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "webapp.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--ws",
            "websockets-sansio",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**stack.env, "PYTHONPATH": str(ROOT)},
        stdout=open(stack.tmp / "web-2.log", "ab"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, 60, other)

        async def scenario() -> tuple[dict[str, Any], list[str]]:
            async with (
                editor(stack, graph, "a", "here") as here,
                editor(stack, graph, "a", "there", port=port) as there,
            ):
                await here.synced()
                await there.synced()
                ids = [
                    await here.add_node("ReLU", source="fc2"),
                    await there.add_node("GELU", source="fc2"),
                ]
                await here.set_param(ids[0], "inplace", False)
                return await converge(here, there), ids

        doc, ids = asyncio.run(scenario())
        assert set(ids) <= set(doc["nodes"])
        assert doc["nodes"][ids[0]]["params"] == {"inplace": False}
    finally:
        other.terminate()
        other.wait(10)


def test_a_demoted_member_turns_read_only_and_a_removed_one_is_closed(stack: ServiceStack) -> None:
    import uuid

    graph = new_graph(stack, "collab membership")
    admin_a, team_a = stack.api("a"), stack.world["a"]["team"]
    name = f"cora_{uuid.uuid4().hex[:8]}"
    made = admin_a.post(
        f"/api/teams/{team_a}/invitations/", json={"email": f"{name}@example.org", "role": "editor"}
    )
    assert made.status_code == 201, made.text
    anon = stack.api(None)
    accepted = anon.post(
        f"/api/invitations/{made.json()['token']}/accept/",
        json={"username": name, "password": "a-long-enough-password"},
    )
    assert accepted.status_code == 201, accepted.text
    user_id = accepted.json()["user"]["id"]
    token = anon.post(
        "/api/auth/token/", json={"username": name, "password": "a-long-enough-password"}
    ).json()["token"]

    async def scenario() -> tuple[str | None, list[str], int | None]:
        async with Editor(room(stack, graph), token, name) as cora:
            await cora.synced()
            first = await cora.add_node("ReLU", source="fc2")  # an editor: accepted
            demoted = await asyncio.to_thread(
                admin_a.request,
                "PATCH",
                f"/api/teams/{team_a}/members/{user_id}/",
                {"role": "viewer"},
            )
            assert demoted.status_code == 200, demoted.text
            await asyncio.sleep(1.0)  # the access.changed hint reaches the socket
            await cora.add_node("Tanh", source="fc2")
            await cora.until(lambda: cora.client.denied)
            removed = await asyncio.to_thread(
                admin_a.request, "DELETE", f"/api/teams/{team_a}/members/{user_id}/"
            )
            assert removed.status_code == 204, removed.text
            await asyncio.wait_for(cora.closed.wait(), 10)
            return first, cora.client.denied, cora.closed_code

    first, denied, code = asyncio.run(scenario())
    assert denied == ["read-only"] and code == 4403
    ops = [
        n["op"] for n in stack.api("a").get(f"/api/graphs/{graph}/collab/").json()["spec"]["nodes"]
    ]
    assert ops == [
        "Linear",
        "ReLU",
        "Linear",
        "ReLU",
    ]  # the first edit stayed, the refused one did not
