/**
 * A small WebAssembly writer: the binary of a module of exported functions that import one memory
 * (`env.memory`), written from a few instructions, and the global WebAssembly API as far as this
 * engine uses it (TypeScript's ES library does not declare it). For kernels that JavaScript cannot
 * express cheaply: a branch-free comparison (`f64.le` gives 0 or 1) and loads without bounds or type checks.
 * Pure code: no I/O.
 */

export const I32 = 0x7f;

/** WebAssembly opcodes used by the kernels (the core specification's numbering). */
export const OP = {
  i32Eqz: 0x45,
  i32LtS: 0x48,
  i32GeU: 0x4f,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32Mul: 0x6c,
  i32Or: 0x72,
  i32Xor: 0x73,
  i32Shl: 0x74,
  f64Le: 0x65,
  f64Add: 0xa0,
  /** the first of two values if the i32 on top is not 0, else the second */
  select: 0x1b,
} as const;

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

const name = (s: string): number[] => [...uleb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];
const vector = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];

/** A function body's instructions, appended in order (a stack machine: operands before their operator). */
export class Code {
  readonly bytes: number[] = [];
  get(local: number): this {
    this.bytes.push(0x20, ...uleb(local));
    return this;
  }
  set(local: number): this {
    this.bytes.push(0x21, ...uleb(local));
    return this;
  }
  tee(local: number): this {
    this.bytes.push(0x22, ...uleb(local));
    return this;
  }
  i32(value: number): this {
    this.bytes.push(0x41, ...sleb(value));
    return this;
  }
  op(opcode: number): this {
    this.bytes.push(opcode);
    return this;
  }
  /** i32.load at the address on the stack plus `offset` */
  loadI32(offset: number): this {
    this.bytes.push(0x28, 2, ...uleb(offset));
    return this;
  }
  /** f64.load at the address on the stack plus `offset` */
  loadF64(offset: number): this {
    this.bytes.push(0x2b, 3, ...uleb(offset));
    return this;
  }
  /** i32.store of the value on the stack at the address under it plus `offset` */
  storeI32(offset: number): this {
    this.bytes.push(0x36, 2, ...uleb(offset));
    return this;
  }
  /** f64.store of the value on the stack at the address under it plus `offset` */
  storeF64(offset: number): this {
    this.bytes.push(0x39, 3, ...uleb(offset));
    return this;
  }
  block(): this {
    this.bytes.push(0x02, 0x40);
    return this;
  }
  loop(): this {
    this.bytes.push(0x03, 0x40);
    return this;
  }
  /** if the i32 on the stack is not 0 (an `else` may follow, then `end`) */
  if(): this {
    this.bytes.push(0x04, 0x40);
    return this;
  }
  else(): this {
    this.bytes.push(0x05);
    return this;
  }
  end(): this {
    this.bytes.push(0x0b);
    return this;
  }
  /** branch to the `depth`-th enclosing block (its end) or loop (its start) */
  br(depth: number): this {
    this.bytes.push(0x0c, ...uleb(depth));
    return this;
  }
  brIf(depth: number): this {
    this.bytes.push(0x0d, ...uleb(depth));
    return this;
  }
}

/** An exported function: its i32 parameters, its i32 locals after them, no result. */
export interface WasmFunction {
  name: string;
  params: number;
  locals: number;
  code: Code;
}

/** The binary of a module importing `env.memory` and exporting `functions`. */
export function wasmModule(functions: WasmFunction[]): Uint8Array {
  const types = functions.map((f) => [0x60, ...vector(Array.from({ length: f.params }, () => [I32])), 0]);
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, vector(types)),
    ...section(2, vector([[...name('env'), ...name('memory'), 0x02, 0x00, 0x01]])),
    ...section(3, vector(functions.map((_, i) => uleb(i)))),
    ...section(7, vector(functions.map((f, i) => [...name(f.name), 0x00, ...uleb(i)]))),
    ...section(
      10,
      vector(
        functions.map((f) => {
          const body = [...vector(f.locals > 0 ? [[...uleb(f.locals), I32]] : []), ...f.code.bytes, 0x0b];
          return [...uleb(body.length), ...body];
        }),
      ),
    ),
  ]);
}

export interface WasmMemory {
  buffer: ArrayBuffer;
  grow(pages: number): number;
}

/** The part of the global WebAssembly API these kernels use. */
export interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number }) => WasmMemory;
}

/** The runtime's WebAssembly, or null where there is none (e.g. node --jitless). */
export function wasmApi(): WasmApi | null {
  const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  return api && typeof api.Module === 'function' ? api : null;
}

export const WASM_PAGE = 65536;
