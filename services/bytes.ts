/**
 * Bytes crossing between the API and its engine threads: a Buffer is moved (its ArrayBuffer
 * transferred, not copied) and arrives as a plain Uint8Array.
 */

/** The bytes in an ArrayBuffer of their own, to move to a thread (a copy only when they share one). */
export function movable(bytes: Buffer): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? new Uint8Array(bytes.buffer) : new Uint8Array(bytes);
}

/** A Buffer over bytes that crossed a thread boundary (no copy). */
export function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
