/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * An incremental, read-only SSE frame observer over raw response bytes.
 *
 * It sees what the SDK's parser hides from application code: frames without ids, explicit empty ids, comments
 * (keep-alives) and the end of the stream. It follows eventsource-parser's rules for what is a frame (a blank
 * line after at least one `data` line) and for ids (per frame; ids holding NUL are ignored), but keeps only ids:
 * data lines are skipped with a native byte search, so memory stays bounded whatever the server sends.
 */

import { atLeast } from './numbers';
import { MAX_EVENT_ID_BYTES, oversizedIdKey } from './event-id';

const LF = 10;
const CR = 13;
const COLON = 58;
const SPACE = 32;

/** Field being read on the current line. */
// biome-ignore lint/suspicious/noConstEnum: inlined on the per-byte hot path; never exported
const enum Field {
  Unknown = 0,
  Data = 1,
  Id = 2,
  Comment = 3,
  Other = 4,
}

export interface SseFrameHandlers {
  /** A frame was dispatched. `id` is undefined when the frame had no (valid) id line, '' for an empty id. */
  onFrame(id: string | undefined): void;
  /** A comment line (such as `: keepalive`) was seen. */
  onComment?(): void;
}

export interface SseFrameObserverOptions {
  /** Id bytes kept per frame; longer ids are reduced to a digest key. Default MAX_EVENT_ID_BYTES. */
  maxIdBytes?: number;
}

const FIELD_NAME_MAX = 8;

/**
 * Node's Buffer, when there is one. Its `indexOf` is a memchr: a Uint8Array's is a byte loop in the runtime, about
 * five times slower on a 200-byte line and worse on the CR check of a 16 KiB chunk, which together were half of the
 * observer's time. Its `utf8Slice` decodes like a fatal-free TextDecoder without a subarray per id.
 */
interface NodeBufferView extends Uint8Array {
  utf8Slice(start: number, end: number): string;
}
interface NodeBufferClass {
  from(buffer: ArrayBufferLike, byteOffset: number, length: number): NodeBufferView;
  isBuffer(value: unknown): boolean;
}
const NodeBuffer = (globalThis as unknown as { Buffer?: NodeBufferClass }).Buffer;
const hasBuffer = typeof NodeBuffer?.from === 'function' && typeof NodeBuffer.isBuffer === 'function';

/** The same bytes as a Buffer (a view, never a copy), or the chunk itself where there is no Buffer. */
function searchable(chunk: Uint8Array): Uint8Array {
  if (!hasBuffer || NodeBuffer!.isBuffer(chunk)) return chunk;
  return NodeBuffer!.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

export class SseFrameObserver {
  /** Decodes id values only; a BOM there is part of the id (the stream's BOM is skipped separately). */
  private readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  private readonly maxIdBytes: number;
  private atStreamStart = true;
  private bomBytesSeen = 0;
  private skipLf = false;
  // Current line.
  private field: Field = Field.Unknown;
  private fieldName = new Uint8Array(FIELD_NAME_MAX);
  private fieldNameLength = 0;
  private lineEmpty = true;
  private valueStarted = false;
  /** Copies of the id's bytes, for an id line that spans chunks. */
  private idBytes: Uint8Array[] = [];
  /** An id line that ends in the chunk being pushed is decoded straight from it, before push() returns: no copy. */
  private idChunk: Uint8Array | undefined = undefined;
  private idStart = 0;
  private idEnd = 0;
  private idLength = 0;
  /** The id passed maxIdBytes: from then on its bytes are only hashed (for the digest key) and checked for NUL. */
  private idDigesting = false;
  private idHasNul = false;
  private idHash = 0x811c9dc5;
  private chunkHasCr = false;
  // Current frame.
  private dataLines = 0;
  private frameId: string | undefined = undefined;

  framesSeen = 0;
  commentsSeen = 0;
  bytesSeen = 0;

  constructor(
    private readonly handlers: SseFrameHandlers,
    options: SseFrameObserverOptions = {},
  ) {
    const max = options.maxIdBytes;
    // NaN would keep no id bytes at all (every id would read as ''), Infinity would keep ids unbounded.
    const bytes = atLeast(max, 0);
    this.maxIdBytes = bytes === undefined ? MAX_EVENT_ID_BYTES : Math.floor(bytes);
  }

  /** Feeds a chunk of the response body. Never throws on malformed input. */
  push(bytes: Uint8Array): void {
    const chunk = searchable(bytes);
    this.bytesSeen += chunk.length;
    // CR line ends are rare; knowing a chunk has none keeps line scanning on the native LF search.
    this.chunkHasCr = chunk.indexOf(CR) !== -1;
    let i = 0;
    const n = chunk.length;
    if (this.atStreamStart) i = this.skipBom(chunk);
    while (i < n) {
      if (this.skipLf) {
        this.skipLf = false;
        if (chunk[i] === LF) {
          i++;
          continue;
        }
      }
      const byte = chunk[i]!;
      if (byte === LF || byte === CR) {
        this.endLine();
        if (byte === CR) this.skipLf = true;
        i++;
        continue;
      }
      this.lineEmpty = false;
      if (this.field === Field.Unknown) {
        // The three names an MCP server writes, read whole at the start of a line; anything else byte by byte.
        const known = this.fieldNameLength === 0 ? this.knownFieldName(chunk, i, n) : 0;
        i = known !== 0 ? i + known : this.readFieldName(chunk, i);
        continue;
      }
      if (this.field === Field.Id) {
        i = this.readIdValue(chunk, i);
        continue;
      }
      // Data, comments and unknown fields: nothing to keep, jump to the end of the line.
      i = nextLineBreak(chunk, i, this.chunkHasCr);
    }
  }

  /** The stream ended. A pending frame without its blank line is not dispatched, as in eventsource-parser. */
  end(): void {
    this.resetLine();
    this.dataLines = 0;
    this.frameId = undefined;
  }

  private skipBom(chunk: Uint8Array): number {
    const bom = [0xef, 0xbb, 0xbf];
    let i = 0;
    while (i < chunk.length && this.bomBytesSeen < 3) {
      if (chunk[i] !== bom[this.bomBytesSeen]) {
        // Not a BOM after all: replay the bytes taken for one as the start of a field name.
        const taken = this.bomBytesSeen;
        this.atStreamStart = false;
        this.bomBytesSeen = 3;
        for (let k = 0; k < taken; k++) this.feedFieldByte(bom[k]!);
        if (taken > 0) this.lineEmpty = false;
        return i;
      }
      this.bomBytesSeen++;
      i++;
    }
    if (this.bomBytesSeen >= 3) this.atStreamStart = false;
    return i;
  }

  /** `data:`, `id:` or `event:` starting at `i` and complete in the chunk: sets the field, returns its length. */
  private knownFieldName(chunk: Uint8Array, i: number, n: number): number {
    const b = chunk[i];
    if (b === 100 && i + 4 < n && chunk[i + 1] === 97 && chunk[i + 2] === 116 && chunk[i + 3] === 97) {
      if (chunk[i + 4] !== COLON) return 0;
      this.field = Field.Data;
      this.valueStarted = false;
      return 5;
    }
    if (b === 105 && i + 2 < n && chunk[i + 1] === 100 && chunk[i + 2] === COLON) {
      this.field = Field.Id;
      this.valueStarted = false;
      return 3;
    }
    if (
      b === 101 &&
      i + 5 < n &&
      chunk[i + 1] === 118 &&
      chunk[i + 2] === 101 &&
      chunk[i + 3] === 110 &&
      chunk[i + 4] === 116 &&
      chunk[i + 5] === COLON
    ) {
      this.field = Field.Other;
      this.valueStarted = false;
      return 6;
    }
    return 0;
  }

  private readFieldName(chunk: Uint8Array, i: number): number {
    const n = chunk.length;
    while (i < n) {
      const byte = chunk[i]!;
      if (byte === LF || byte === CR) return i;
      if (byte === COLON) {
        this.field = this.classifyField(true);
        this.valueStarted = false;
        return i + 1;
      }
      this.feedFieldByte(byte);
      i++;
    }
    return i;
  }

  private feedFieldByte(byte: number): void {
    if (this.fieldNameLength === 0 && byte === COLON) return;
    if (this.fieldNameLength < FIELD_NAME_MAX) this.fieldName[this.fieldNameLength] = byte;
    this.fieldNameLength++;
  }

  private classifyField(hadColon: boolean): Field {
    const len = this.fieldNameLength;
    const f = this.fieldName;
    if (len === 0 && hadColon) return Field.Comment;
    if (len === 4 && f[0] === 100 && f[1] === 97 && f[2] === 116 && f[3] === 97) return Field.Data;
    if (len === 2 && f[0] === 105 && f[1] === 100) return Field.Id;
    return Field.Other;
  }

  private readIdValue(chunk: Uint8Array, i: number): number {
    if (!this.valueStarted) {
      this.valueStarted = true;
      if (chunk[i] === SPACE) i++;
    }
    const end = nextLineBreak(chunk, i, this.chunkHasCr);
    if (end > i) this.appendId(chunk, i, end);
    return end;
  }

  private appendId(chunk: Uint8Array, start: number, end: number): void {
    if (!this.idDigesting && this.idLength + (end - start) > this.maxIdBytes) {
      // Oversized: the bytes kept so far go into the digest, and nothing more is kept.
      this.idDigesting = true;
      for (const part of this.idBytes) this.digestId(part, 0, part.length);
      this.idBytes = [];
    }
    if (this.idDigesting) {
      this.digestId(chunk, start, end);
    } else if (end < chunk.length && this.idBytes.length === 0) {
      // The line break is in this chunk, so takeId() runs before push() returns.
      this.idChunk = chunk;
      this.idStart = start;
      this.idEnd = end;
    } else {
      // Copy: the chunk belongs to the stream and may be reused after push() returns. (A Buffer's own slice() is
      // a view: the typed array's is a copy.)
      this.idBytes.push(Uint8Array.prototype.slice.call(chunk, start, end));
    }
    this.idLength += end - start;
  }

  /** FNV-1a over the bytes of an oversized id, in order (the key eventIdKey gives the decoded id). */
  private digestId(bytes: Uint8Array, start: number, end: number): void {
    let hash = this.idHash;
    for (let k = start; k < end; k++) {
      const b = bytes[k]!;
      if (b === 0) this.idHasNul = true;
      hash = Math.imul(hash ^ b, 0x01000193);
    }
    this.idHash = hash;
  }

  private endLine(): void {
    if (this.lineEmpty) {
      this.dispatch();
      return;
    }
    let field = this.field;
    // A line without a colon is a field name with an empty value.
    if (field === Field.Unknown) field = this.classifyField(false);
    if (field === Field.Data) this.dataLines++;
    else if (field === Field.Id) this.takeId();
    else if (field === Field.Comment) {
      this.commentsSeen++;
      this.handlers.onComment?.();
    }
    this.resetLine();
  }

  private takeId(): void {
    if (this.idHasNul) return;
    if (this.idDigesting) {
      this.frameId = oversizedIdKey(this.idLength, this.idHash);
      return;
    }
    let id: string;
    if (this.idChunk !== undefined) {
      const chunk = this.idChunk;
      id = hasBuffer
        ? (chunk as NodeBufferView).utf8Slice(this.idStart, this.idEnd)
        : this.decoder.decode(chunk.subarray(this.idStart, this.idEnd));
    } else if (this.idBytes.length === 0) {
      id = '';
    } else if (this.idBytes.length === 1) {
      id = this.decoder.decode(this.idBytes[0]);
    } else {
      const all = new Uint8Array(this.idLength);
      let offset = 0;
      for (const part of this.idBytes) {
        all.set(part, offset);
        offset += part.length;
      }
      id = this.decoder.decode(all);
    }
    // A NUL byte decodes to U+0000, and nothing else does (an overlong form decodes to U+FFFD): one search
    // of the string instead of a look at every byte.
    if (id.indexOf('\u0000') === -1) this.frameId = id;
  }

  private dispatch(): void {
    this.resetLine();
    if (this.dataLines > 0) {
      const id = this.frameId;
      this.framesSeen++;
      this.dataLines = 0;
      this.frameId = undefined;
      this.handlers.onFrame(id);
      return;
    }
    this.frameId = undefined;
  }

  private resetLine(): void {
    this.field = Field.Unknown;
    this.fieldNameLength = 0;
    this.lineEmpty = true;
    this.valueStarted = false;
    // Only appendId touches the id's state, and it always adds to idLength: most lines have nothing to reset.
    if (this.idLength === 0) return;
    if (this.idBytes.length > 0) this.idBytes = [];
    this.idChunk = undefined;
    this.idLength = 0;
    this.idDigesting = false;
    this.idHasNul = false;
    this.idHash = 0x811c9dc5;
  }
}

function nextLineBreak(chunk: Uint8Array, from: number, hasCr: boolean): number {
  const lf = chunk.indexOf(LF, from);
  const end = lf === -1 ? chunk.length : lf;
  if (hasCr) for (let k = from; k < end; k++) if (chunk[k] === CR) return k;
  return end;
}
