import type { StoredDocument, StoredDocumentChunk } from '../../src/kernel/index.js'
import { byKey, copy, Scoped } from '../../src/store/index.js'

/**
 * The documents of a memory state: heads by tenant and id, and each document's chunks by index
 * (one map per document, so a delete drops them at once). Plain data, one field of `MemoryMaps`, with the functions over it below.
 */
export interface DocumentMaps {
  readonly heads: Scoped<StoredDocument>
  readonly chunks: Scoped<Map<number, StoredDocumentChunk>>
}

/** Empty maps. */
export function emptyDocumentMaps(): DocumentMaps {
  return { heads: new Scoped(), chunks: new Scoped() }
}

export function put(m: DocumentMaps, document: StoredDocument): void {
  m.heads.set(document.tenant_id, document.id, document)
}

export function putChunk(m: DocumentMaps, chunk: StoredDocumentChunk): void {
  let held = m.chunks.get(chunk.tenant_id, chunk.document_id)
  if (!held) {
    held = new Map()
    m.chunks.set(chunk.tenant_id, chunk.document_id, held)
  }
  held.set(chunk.index, chunk)
}

export function remove(m: DocumentMaps, tenantId: string, id: string): void {
  m.heads.delete(tenantId, id)
  m.chunks.delete(tenantId, id)
}

export function get(m: DocumentMaps, tenantId: string, id: string): StoredDocument | null {
  const d = m.heads.get(tenantId, id)
  return d ? copy(d) : null
}

export function list(
  m: DocumentMaps,
  tenantId: string,
  query: { after?: string; limit: number },
): StoredDocument[] {
  const after = query.after
  return [...m.heads.of(tenantId).values()]
    .filter((d) => after === undefined || d.id > after)
    .sort(byKey((d) => d.id))
    .slice(0, Math.max(0, query.limit))
    .map(copy)
}

export function getChunk(
  m: DocumentMaps,
  tenantId: string,
  documentId: string,
  index: number,
): StoredDocumentChunk | null {
  const c = m.chunks.get(tenantId, documentId)?.get(index)
  return c ? { ...c } : null
}

/** Every chunk, as stored (for `records()`: neither copied nor sorted). */
export function allChunks(m: DocumentMaps): StoredDocumentChunk[] {
  return [...m.chunks.values()].flatMap((held) => [...held.values()])
}

export function dump(m: DocumentMaps): {
  documents: StoredDocument[]
  document_chunks: StoredDocumentChunk[]
} {
  const pad = (n: number) => String(n).padStart(10, '0')
  return {
    documents: [...m.heads.values()].sort(byKey((d) => `${d.tenant_id}\u0000${d.id}`)).map(copy),
    document_chunks: allChunks(m)
      .sort(byKey((c) => `${c.tenant_id}\u0000${c.document_id}\u0000${pad(c.index)}`))
      .map((c) => ({ ...c })),
  }
}
