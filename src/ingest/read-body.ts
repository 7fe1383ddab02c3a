// Reads a request body as raw bytes, refusing more than `limit` bytes without buffering them.
export type BodyRead = { ok: true; bytes: Uint8Array } | { ok: false; size: number | null };

export async function readBody(request: Request, limit: number): Promise<BodyRead> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    const size = Number(declared);
    if (size > limit) return { ok: false, size };
    return { ok: true, bytes: new Uint8Array(await request.arrayBuffer()) };
  }
  if (!request.body) return { ok: true, bytes: new Uint8Array(0) };
  // Chunked upload: count as it streams and stop at the limit.
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of request.body) {
    total += chunk.byteLength;
    if (total > limit) return { ok: false, size: null };
    chunks.push(chunk);
  }
  return { ok: true, bytes: Buffer.concat(chunks) };
}
