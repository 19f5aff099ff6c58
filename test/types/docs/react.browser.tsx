// docs/getting-started.md React snippets and api.md's.
import { useConnectionState, useRpcClient, useSubscription } from "@dorpc/react";
import type { WithTopics } from "@dorpc/rpc";
import { useState } from "react";
import type { CounterApi } from "./browser-api.types.js";

export function Counter({ room }: { room: string }) {
  const counter = useRpcClient<CounterApi>("COUNTER", room);
  const state = useConnectionState(counter);
  const [value, setValue] = useState<number>();
  return (
    // biome-ignore lint/a11y/useButtonType: the guide's snippet, as it is
    <button disabled={state === "reconnecting"} onClick={async () => setValue(await counter.increment())}>
      {value ?? "+1"} ({state})
    </button>
  );
}

interface ChatMessage {
  from: string;
  text: string;
  at: Date;
}
interface RoomApi extends WithTopics<{ messages: ChatMessage }> {
  say(text: string): number;
  vote(what: string): void;
}

export function Messages({ room }: { room: string }) {
  const client = useRpcClient<RoomApi>("ROOM", room);
  const [messages, setMessages] = useState<{ seq: number; message: ChatMessage }[]>([]);
  const { status, error } = useSubscription(client, "messages", (message, { seq }) => setMessages((list) => [...list, { seq, message }]));
  if (status === "failed") return <p role="alert">{String(error)}</p>;
  return (
    <ol>
      {messages.map(({ seq, message }) => (
        <li key={seq}>
          <b>{message.from}</b>: {message.text}
        </li>
      ))}
    </ol>
  );
}

export function Room({ name }: { name: string }) {
  const room = useRpcClient<RoomApi>("ROOM", name);
  const s = useConnectionState(room); // "idle" | "connecting" | "open" | "reconnecting" | "disposed"
  const [count, setCount] = useState(0);
  const { status } = useSubscription(room, "messages", () => setCount((n) => n + 1));
  void [s, count, status];
  // biome-ignore lint/a11y/useButtonType: api.md's snippet, as it is
  return <button onClick={() => room.vote("tabs")}>tabs</button>;
}
