/**
 * `encode` / `decode` of a single value outside any connection: the same wire form dorpc uses
 * for arguments and results, for callers that want to store or forward a value.
 */
import { decodeContext, type EncodeContext, readValue, resolveBlobs, writeValue } from "./codec.js";
import { RpcError } from "./errors.js";
import { readFrame, writeFrame, type IncomingData, type WireFrame } from "./frame.js";
import { resolveLimits, type RpcLimits } from "./limits.js";

/** The frame kind of a standalone value: "V". */
const VALUE_KIND = 0x56;

/** Options for {@link encode}. */
export interface EncodeOptions {
  /** Keep `Error.stack` on Error values. Default `true`. */
  errorStack?: boolean;
}

/**
 * Encodes any structured-clone value (plus Errors with cause and own properties) into a string,
 * or into bytes when the value holds binary data. Throws `RpcError` `ENCODE` for functions,
 * symbols, class instances and values holding a Blob or File (their bytes can only be read
 * asynchronously: use {@link encodeAsync}).
 */
export function encode(value: unknown, options?: EncodeOptions): WireFrame {
  const ctx = contextOf(options);
  const [tag, payload] = writeValue(value, ctx);
  if (ctx.pending?.length) {
    throw new RpcError("ENCODE", "The value holds a Blob or File, whose bytes can only be read asynchronously: use encodeAsync.");
  }
  return writeFrame(VALUE_KIND, JSON.stringify([tag, payload]), ctx.blobs);
}

/** Like {@link encode}, and also reads the bytes of every Blob and File the value holds. */
export async function encodeAsync(value: unknown, options?: EncodeOptions): Promise<WireFrame> {
  const ctx = contextOf(options);
  const [tag, payload] = writeValue(value, ctx);
  if (ctx.pending?.length) await resolveBlobs(ctx.blobs, ctx.pending);
  return writeFrame(VALUE_KIND, JSON.stringify([tag, payload]), ctx.blobs);
}

function contextOf(options: EncodeOptions | undefined): EncodeContext {
  return { blobs: [], stack: options?.errorStack ?? true, label: "value" };
}

/**
 * Decodes what {@link encode} produced, validating it first against `limits`. Throws `RpcError`
 * `DECODE` for anything malformed and `LIMIT` for anything too large.
 */
export function decode(data: IncomingData, limits?: Partial<RpcLimits>): unknown {
  const resolved = resolveLimits(limits);
  const frame = readFrame(data, resolved);
  if (!frame || frame.kind !== VALUE_KIND) throw new RpcError("DECODE", "Input is not an encoded dorpc value.");
  const body = frame.body;
  if (!Array.isArray(body) || body.length !== 2) throw new RpcError("DECODE", "Encoded value must be [tag, payload].");
  return readValue(body[0], body[1], decodeContext(frame.blobs, resolved));
}
