// @ungap/structured-clone ships no types; the conformance tier uses only these two functions.
declare module "@ungap/structured-clone" {
  export type UngapRecord = [type: number | string, value?: unknown];
  export function serialize(value: unknown, options?: { json?: boolean; lossy?: boolean }): UngapRecord[];
  export function deserialize(records: UngapRecord[]): unknown;
}
