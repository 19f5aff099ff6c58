/**
 * Diagnostic: the floor protocol over a non-hibernatable socket (`server.accept()`, as capnweb's
 * `newWorkersRpcResponse` does). floor vs floor-accept is the cost of the hibernation API alone.
 */
import { floorContender } from "./floor.js";

export const floorAccept = floorContender(
  "floor-accept",
  "floor over a non-hibernatable socket (server.accept(), /floor-accept/<instance>; diagnostic)",
  "/floor-accept/",
);
