import type { StoredDocument, StoredDocumentChunk } from '../../src/kernel/index.js'
import { byKey, copy, Scoped } from '../../src/store/index.js'

/**
 * The documents of a memory state: heads by tenant and id, and each document's chunks by index
 * (one map per document, so a delete drops them at once). Composed into `MemoryMaps` (one field).
 */
export class DocumentMaps {
  readonly heads = new Scoped<StoredDocument>()
  readonly chunks = new Scoped<Map<number, StoredDocumentChunk>>()

  put(document: StoredDocument): void {
    this.heads.set(document.tenant_id, document.id, document)
  }

  putChunk(chunk: StoredDocumentChunk): void {
    let held = this.chunks.get(chunk.tenant_id, chunk.document_id)
    if (!held) {
      held = new Map()
      this.chunks.set(chunk.tenant_id, chunk.document_id, held)
    }
    held.set(chunk.index, chunk)
  }

  delete(tenantId: string, id: string): void {
    this.heads.delete(tenantId, id)
    this.chunks.delete(tenantId, id)
  }

  get(tenantId: string, id: string): StoredDocument | null {
    const d = this.heads.get(tenantId, id)
    return d ? copy(d) : null
  }

  list(tenantId: string, query: { after?: string; limit: number }): StoredDocument[] {
    const after = query.after
    return [...this.heads.of(tenantId).values()]
      .filter((d) => after === undefined || d.id > after)
      .sort(byKey((d) => d.id))
      .slice(0, Math.max(0, query.limit))
      .map(copy)
  }

  getChunk(tenantId: string, documentId: string, index: number): StoredDocumentChunk | null {
    const c = this.chunks.get(tenantId, documentId)?.get(index)
    return c ? { ...c } : null
  }

  /** Every chunk, as stored (for `records()`: neither copied nor sorted). */
  allChunks(): StoredDocumentChunk[] {
    return [...this.chunks.values()].flatMap((held) => [...held.values()])
  }

  dump(): { documents: StoredDocument[]; document_chunks: StoredDocumentChunk[] } {
    const pad = (n: number) => String(n).padStart(10, '0')
    return {
      documents: [...this.heads.values()].sort(byKey((d) => `${d.tenant_id}\u0000${d.id}`)).map(copy),
      document_chunks: this.allChunks()
        .sort(byKey((c) => `${c.tenant_id}\u0000${c.document_id}\u0000${pad(c.index)}`))
        .map((c) => ({ ...c })),
    }
  }
}
