import type { StoredDocument, StoredDocumentChunk } from '../../src/kernel/index.js'
import type { Op } from '../../src/store/index.js'
import type { Databases } from './env.js'
import { key, prefix, read } from './keys.js'

/** A chunk's index as a key part that sorts as the number does. */
const place = (index: number) => String(index).padStart(10, '0')

/**
 * Applies a `document.*` or `document_chunk.put` op in the current write transaction: heads in
 * `documents` keyed `[tenant, id]`, each chunk a record of its own in `documentChunks` keyed
 * `[tenant, document, index]` (LMDB values stay small; a delete removes the document's range).
 * False for any other op.
 */
export function applyDocumentOp(
  dbs: Databases,
  op: Op,
): op is Extract<Op, { op: 'document.put' | 'document_chunk.put' | 'document.delete' }> {
  if (op.op === 'document.put') dbs.documents.put(key(op.document.tenant_id, op.document.id), op.document)
  else if (op.op === 'document_chunk.put') {
    const c = op.chunk
    dbs.documentChunks.put(key(c.tenant_id, c.document_id, place(c.index)), c)
  } else if (op.op === 'document.delete') {
    dbs.documents.remove(key(op.tenant_id, op.id))
    for (const k of [...dbs.documentChunks.getKeys(prefix(op.tenant_id, op.id))]) dbs.documentChunks.remove(k)
  } else return false
  return true
}

/** The document reads, over the databases `fresh()` answers (a current snapshot). */
export function documentReads(fresh: () => Databases) {
  return {
    listDocuments: async (t: string, query: { after?: string; limit: number }) => {
      const range = prefix(t)
      const out: StoredDocument[] = []
      const start = query.after === undefined ? range.start : key(t, query.after)
      for (const { value } of fresh().documents.getRange({ start, end: range.end })) {
        const d = value as StoredDocument
        if (d.id === query.after) continue
        if (out.length >= query.limit) break
        out.push(d)
      }
      return out
    },
    getDocument: async (t: string, id: string) =>
      (read(fresh().documents, t, id) as StoredDocument | undefined) ?? null,
    getDocumentChunk: async (t: string, id: string, index: number) =>
      (read(fresh().documentChunks, t, id, place(index)) as StoredDocumentChunk | undefined) ?? null,
  }
}

/** Every document head and chunk, by tenant, id (then index): the dump. */
export const allDocuments = (dbs: Databases) => ({
  documents: [...dbs.documents.getRange({})].map((e) => e.value as StoredDocument),
  document_chunks: [...dbs.documentChunks.getRange({})].map((e) => e.value as StoredDocumentChunk),
})
