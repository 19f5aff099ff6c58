import { createRpcClient, rpcConnection, subscribe } from "@dorpc/rpc";
import type { ChatClient, ChatMessage, RoomApi } from "./api.js";

// `?name=ann&room=lobby` in the page's URL; a random guest name otherwise.
const params = new URLSearchParams(location.search);
const name = params.get("name") || `guest-${Math.floor(1000 + Math.random() * 9000)}`;
const roomName = params.get("room") || "lobby";

const log = document.querySelector<HTMLOListElement>("#log")!;
const online = document.querySelector<HTMLElement>("#online")!;
const state = document.querySelector<HTMLElement>("#state")!;
const form = document.querySelector<HTMLFormElement>("#compose")!;
const input = document.querySelector<HTMLInputElement>("#text")!;
const send = document.querySelector<HTMLButtonElement>("#send")!;
document.querySelector("#me")!.textContent = name;
document.querySelector("#room")!.textContent = roomName;

// Served by the same Worker, so the client connects to location.origin: no baseUrl needed.
// `expose` is what the room may call on this page: its broadcasts of who is online.
const room = createRpcClient<RoomApi>("ROOM", roomName, {
  query: { name },
  expose: {
    online(names) {
      online.textContent = names.join(", ");
    },
  } satisfies ChatClient,
});
const connection = rpcConnection(room);
connection.onStateChange((next) => {
  state.textContent = next;
  // Every connection, the first and each reconnect, announces this page to the room.
  if (next === "open") room.hello().catch(() => undefined);
});

/** The sequence number of the last message shown: each message is shown once, in order. */
let shown = 0;

function show(message: ChatMessage, seq: number): void {
  if (seq <= shown) return;
  shown = seq;
  const item = document.createElement("li");
  item.dataset.seq = String(seq);
  const from = document.createElement("b");
  from.textContent = message.from;
  const text = document.createElement("span");
  text.textContent = message.text;
  const time = document.createElement("time");
  time.dateTime = message.at.toISOString();
  time.textContent = message.at.toLocaleTimeString();
  item.append(from, ": ", text, " ", time);
  log.append(item);
  item.scrollIntoView({ block: "end" });
}

/** Shows the room's recent history; returns the newest sequence number in it. */
async function loadHistory(): Promise<number> {
  const { messages, latest } = await room.history(50);
  log.replaceChildren();
  shown = 0;
  for (const message of messages) show(message, message.seq);
  return latest;
}

// History first, then every message after it: `since` makes the subscription start exactly
// where the history ends. When the connection drops, the subscription resumes from the last
// message shown and the room sends what was missed; if the room no longer keeps all of it
// (more than `keep` messages), `onResync` reloads the history instead.
subscribe(room, "messages", (message, info) => show(message, info.seq), {
  since: await loadHistory(),
  onResync: () => void loadHistory(),
});

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  // Shown when it comes back on the topic, in the room's order, like everyone else's.
  await room.say(text);
});
input.disabled = false;
send.disabled = false;
input.focus();

// close() rather than room[Symbol.dispose](): Safari has no Symbol.dispose.
window.addEventListener("pagehide", () => connection.close());
