import { expect, it } from 'vitest'
import type { StoredDocument, StoredDocumentChunk } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { NOW, T, U } from './records.js'

/** A ready document head of tenant `tenant` named `id`, of `chunks` chunks. */
export function documentHead(id: string, tenant = T, chunks = 2): StoredDocument {
  return {
    id,
    tenant_id: tenant,
    state: 'ready',
    metadata: { name: 'scan.pdf', note: '' },
    content_type: 'application/pdf',
    size: chunks * 3,
    chunks,
    created_by: 'app-1',
    created_at: NOW,
  }
}

/** Chunk `index` of document `id` (the store sees whatever `data` it is handed: here plain base64). */
export function documentChunk(id: string, index: number, tenant = T, last = false): StoredDocumentChunk {
  return {
    tenant_id: tenant,
    document_id: id,
    index,
    last,
    data: Buffer.from([index, 0, 255]).toString('base64'),
  }
}

/**
 * Documents: a head and its chunks kept as put (each chunk its own record, read one at a time by
 * index), a put replaces, a delete removes the head and every chunk of its document only, tenants
 * never see each other's, and the dump lists them in order. Registered inside the store suite's
 * `describe`.
 */
export function documentsTests(fresh: () => Promise<Store>): void {
  const chunks = (id: string, n: number, tenant = T) =>
    Array.from({ length: n }, (_, i) => ({
      op: 'document_chunk.put' as const,
      chunk: documentChunk(id, i, tenant, i === n - 1),
    }))

  it('keeps a document head and each chunk as put, read one chunk at a time', async () => {
    const store = await fresh()
    const head = documentHead('d1', T, 3)
    expect(
      (await store.write({ ops: [...chunks('d1', 3), { op: 'document.put', document: head }] })).ok,
    ).toBe(true)
    expect(await store.getDocument(T, 'd1')).toEqual(head)
    for (let i = 0; i < 3; i++)
      expect(await store.getDocumentChunk(T, 'd1', i)).toEqual(documentChunk('d1', i, T, i === 2))
    expect(await store.getDocumentChunk(T, 'd1', 3)).toBeNull()
    const replaced = { ...head, state: 'uploading' as const, metadata: {} }
    await store.write({ ops: [{ op: 'document.put', document: replaced }] })
    expect(await store.getDocument(T, 'd1')).toEqual(replaced)
    await store.close()
  })

  it("never answers another tenant's document, and a delete removes only its own head and chunks", async () => {
    const store = await fresh()
    await store.write({
      ops: [
        ...chunks('d1', 2, T),
        { op: 'document.put', document: documentHead('d1', T) },
        ...chunks('d1', 2, U),
        { op: 'document.put', document: { ...documentHead('d1', U), content_type: 'image/png' } },
        ...chunks('d10', 1, T),
        { op: 'document.put', document: documentHead('d10', T, 1) },
      ],
    })
    expect((await store.getDocument(U, 'd1'))?.content_type).toBe('image/png')
    await store.write({ ops: [{ op: 'document.delete', tenant_id: T, id: 'd1' }] })
    expect(await store.getDocument(T, 'd1')).toBeNull()
    expect(await store.getDocumentChunk(T, 'd1', 0)).toBeNull()
    expect(await store.getDocumentChunk(T, 'd1', 1)).toBeNull()
    // Another tenant's document of the same id, and a document whose id extends it, stay whole.
    expect((await store.getDocument(U, 'd1'))?.content_type).toBe('image/png')
    expect(await store.getDocumentChunk(U, 'd1', 1)).toEqual(documentChunk('d1', 1, U, true))
    expect(await store.getDocumentChunk(T, 'd10', 0)).toEqual(documentChunk('d10', 0, T, true))
    // Deleting what is absent changes nothing.
    expect((await store.write({ ops: [{ op: 'document.delete', tenant_id: T, id: 'missing' }] })).ok).toBe(
      true,
    )
    await store.close()
  })

  it("lists a tenant's heads in id order, a page after another, never another tenant's", async () => {
    const store = await fresh()
    const ids = ['d3', 'd1', 'd10', 'd2']
    await store.write({
      ops: ids.map((id) => ({ op: 'document.put' as const, document: documentHead(id, T, 0) })),
    })
    await store.write({ ops: [{ op: 'document.put', document: documentHead('d0', U, 0) }] })
    const first = await store.listDocuments(T, { limit: 2 })
    expect(first.map((d) => d.id)).toEqual(['d1', 'd10'])
    const rest = await store.listDocuments(T, { after: 'd10', limit: 10 })
    expect(rest.map((d) => d.id)).toEqual(['d2', 'd3'])
    expect(await store.listDocuments(T, { after: 'd3', limit: 10 })).toEqual([])
    expect((await store.listDocuments(U, { limit: 10 })).map((d) => d.id)).toEqual(['d0'])
    await store.close()
  })

  it('dumps heads by tenant then id, and chunks by tenant, document, then index', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        ...chunks('d2', 12, T).reverse(),
        { op: 'document.put', document: documentHead('d2', T, 12) },
        { op: 'document.put', document: documentHead('d1', U, 0) },
      ],
    })
    const dump = await store.dump()
    expect(dump.documents.map((d) => `${d.tenant_id}/${d.id}`)).toEqual([`${T}/d2`, `${U}/d1`].sort())
    expect(dump.document_chunks.map((c) => c.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    await store.close()
  })
}
