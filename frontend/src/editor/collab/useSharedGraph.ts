// The open graph's shared canvas: its room (joined when the page opens, left when it closes), the
// editor store bound to the room's doc once the first sync arrived, and this person's presence.
import { useEffect, useMemo, useState, useSyncExternalStore } from "react";
import type { User } from "../../api/types";
import { EMPTY_SPEC, canonicalJson } from "../convert";
import { setIdTag } from "../ids";
import type { EditorStore } from "../store";
import { CollabBinding } from "./binding";
import { specToYdoc } from "./doc";
import { type Peer, type PresenceApi, type PresenceState, type PresenceUser, colorFor, usePeers } from "./presence";
import { Room, type RoomClosed, type RoomStatus } from "./room";

export interface SharedGraph {
  room: Room;
  /** Null until the first sync: the canvas waits for the shared content. */
  binding: CollabBinding | null;
  status: RoomStatus;
  closed: RoomClosed | null;
  refused: string | null;
  me: PresenceUser;
  peers: Peer[];
  presence: PresenceApi;
}

function useRoomState(room: Room | null) {
  const subscribe = useMemo(() => (room ? room.subscribe : () => () => {}), [room]);
  const snapshot = useSyncExternalStore(subscribe, () => (room ? `${room.status}|${room.synced}|${room.closed?.code ?? ""}|${room.refused ?? ""}` : ""));
  return snapshot;
}

/** The origin of the starting content a graph with nothing saved gets (nobody's undo step). */
const STARTER = "starter";

/**
 * `blankStart`: the graph has no revision, so an empty shared canvas gets the editor's usual
 * starting content (an input `x` and an output). Every client writes the same keys, so two people
 * opening a new graph at once still end up with one input and one output.
 */
export function useSharedGraph(graphId: number, store: EditorStore | null, user: User | null, blankStart = false): SharedGraph | null {
  const [room, setRoom] = useState<Room | null>(null);
  // The room lives as long as the person and the graph: a refreshed session object does not reconnect.
  const userId = user?.id ?? null;
  const username = user?.username ?? null;
  const me = useMemo<PresenceUser | null>(
    () => (userId !== null && username !== null ? { id: userId, username, color: colorFor(userId) } : null),
    [userId, username],
  );

  useEffect(() => {
    if (!me) return;
    const r = new Room(graphId);
    const state: PresenceState = { user: me, cursor: null, selection: [], editing: null, dragging: null };
    r.awareness.setLocalState(state);
    setRoom(r);
    return () => {
      setRoom(null);
      r.destroy();
    };
  }, [graphId, me]);

  useRoomState(room);
  const synced = room?.synced ?? false;
  const [binding, setBinding] = useState<CollabBinding | null>(null);
  useEffect(() => {
    if (!room || !store || !synced) return;
    const b = new CollabBinding(room.doc, store);
    setIdTag(b.tag);
    const blank = (["inputs", "nodes", "outputs"] as const).every((name) => room.doc.getMap(name).size === 0);
    if (blankStart && blank) specToYdoc(EMPTY_SPEC, room.doc, STARTER);
    b.setDragListener((drag) => room.awareness.setLocalStateField("dragging", drag));
    let selection = "[]";
    const unsubscribe = store.subscribe(() => {
      const ids = [...store.selectedIds()].sort();
      const key = canonicalJson(ids);
      if (key === selection) return;
      selection = key;
      room.awareness.setLocalStateField("selection", ids);
    });
    setBinding(b);
    return () => {
      unsubscribe();
      setBinding(null);
      setIdTag(null);
      b.destroy();
    };
  }, [room, store, synced, blankStart]);

  const peers = usePeers(room?.awareness ?? null);
  const presence = useMemo<PresenceApi>(
    () => ({
      peers,
      set: (key, value) => {
        if (!room) return;
        const current = room.awareness.getLocalState() as PresenceState | null;
        if (current && canonicalJson(current[key]) === canonicalJson(value)) return;
        room.awareness.setLocalStateField(key, value);
      },
    }),
    [room, peers],
  );
  if (!room || !me) return null;
  return { room, binding, status: room.status, closed: room.closed, refused: room.refused, me, peers, presence };
}
