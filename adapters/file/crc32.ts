import * as zlib from 'node:zlib'

let table: Uint32Array | undefined

/** A table-driven CRC-32 (IEEE), for Node versions whose zlib lacks `crc32` (before 20.15). */
function crc32Js(data: Uint8Array): number {
  if (!table) {
    table = new Uint32Array(256)
    for (let n = 0; n < 256; n++) {
      let c = n
      for (let i = 0; i < 8; i++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
      table[n] = c >>> 0
    }
  }
  let crc = 0xffffffff
  for (let i = 0; i < data.length; i++) crc = table[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const native = (zlib as { crc32?: (data: Uint8Array) => number }).crc32

/** CRC-32 (IEEE, as zip and zlib compute it) of `data`, as an unsigned 32-bit integer. */
export const crc32: (data: Uint8Array) => number = native ? (data) => native(data) >>> 0 : crc32Js

/** The pure-JS implementation, exported so tests can check it against zlib's. */
export const crc32Portable = crc32Js
