import { useConnectionState, useRpcClient } from "@dorpc/react";
import { StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import type { RoomApi } from "./api.js";

/** One poll: a client per room (the hook closes it when the room changes or the poll unmounts). */
function Poll({ room }: { room: string }) {
  const client = useRpcClient<RoomApi>("ROOM", room);
  const state = useConnectionState(client);
  const [tally, setTally] = useState<Record<string, number>>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    let current = true;
    client.tally().then(
      (value) => current && setTally(value),
      (reason: unknown) => current && setError(String(reason)),
    );
    return () => {
      current = false;
    };
  }, [client]);

  const vote = (option: string) => client.vote(option).then(setTally, (reason: unknown) => setError(String(reason)));

  return (
    <section>
      <p>
        Room <strong>{room}</strong>, connection: <span className="state">{state}</span>
      </p>
      {tally ? (
        <p>
          <button type="button" className="tabs" onClick={() => vote("tabs")}>
            tabs ({tally.tabs})
          </button>{" "}
          <button type="button" className="spaces" onClick={() => vote("spaces")}>
            spaces ({tally.spaces})
          </button>
        </p>
      ) : (
        <p>loading…</p>
      )}
      {error && <p role="alert">{error}</p>}
    </section>
  );
}

function App() {
  const [room, setRoom] = useState("lobby");
  return (
    <main>
      <h1>Tabs or spaces?</h1>
      <label>
        Room{" "}
        <select value={room} onChange={(event) => setRoom(event.target.value)}>
          <option value="lobby">lobby</option>
          <option value="kitchen">kitchen</option>
        </select>
      </label>
      <Poll room={room} />
    </main>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
