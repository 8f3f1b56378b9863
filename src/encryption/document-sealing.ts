import type { StoredDocumentChunk } from '../kernel/index.js'
import { ServiceError } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import type { TenantKey } from './keyring.js'
import { openBinary, sealBinary, sealedVersion } from './keyring.js'

/** What sealing and opening a chunk need of the sealed store (its `Sealing`, structurally). */
interface ChunkKeys {
  keyOf(tenantId: string, version?: number): TenantKey | Promise<TenantKey>
  sealKeyOf(tenantId: string): TenantKey | Promise<TenantKey>
}

/**
 * The additional authenticated data of a document chunk: its tenant, document, index and whether it
 * is the last, so a chunk moved to another document or place, or a document cut short at a chunk
 * boundary (its last chunk is the only one sealed as last), does not open.
 */
const chunkAad = (c: Pick<StoredDocumentChunk, 'tenant_id' | 'document_id' | 'index' | 'last'>) =>
  `tokenvault:document-chunk:v1:${c.tenant_id}:${c.document_id}:${c.index}:${c.last ? 'last' : 'more'}`

/** The error an unreadable chunk answers with: it names the document, never its bytes. */
const unreadable = (id: string) =>
  new ServiceError(
    'unreadable',
    `the stored data of document ${id} fails its integrity check and can't be read`,
  )

/** A chunk as stored: its bytes (`data`, base64 in the clear) sealed under the tenant's key. */
export async function sealChunk(s: ChunkKeys, chunk: StoredDocumentChunk): Promise<StoredDocumentChunk> {
  const key = await s.sealKeyOf(chunk.tenant_id)
  return { ...chunk, data: sealBinary(key, Buffer.from(chunk.data, 'base64'), chunkAad(chunk)) }
}

/** A stored chunk opened (its `data` base64 in the clear); one that fails its check is `unreadable`. */
export async function openChunk(s: ChunkKeys, chunk: StoredDocumentChunk): Promise<StoredDocumentChunk> {
  try {
    const key = await s.keyOf(chunk.tenant_id, sealedVersion(chunk.data))
    return { ...chunk, data: openBinary(key, chunk.data, chunkAad(chunk)).toString('base64') }
  } catch {
    throw unreadable(chunk.document_id)
  }
}

/**
 * The data-key versions the tenant's document chunks are sealed under (read from each chunk's
 * header, nothing decrypted): the key lifecycle keeps them, since documents are not re-sealed.
 */
export async function documentVersions(
  store: Pick<Store, 'listDocuments' | 'getDocumentChunk'>,
  tenantId: string,
): Promise<Set<number>> {
  const versions = new Set<number>()
  let after: string | undefined
  for (;;) {
    const page = await store.listDocuments(tenantId, {
      ...(after === undefined ? {} : { after }),
      limit: 100,
    })
    for (const d of page) {
      // An upload in flight has written chunks its head does not count yet: read until one is missing.
      for (let i = 0; ; i++) {
        const chunk = await store.getDocumentChunk(tenantId, d.id, i)
        if (!chunk) break
        versions.add(sealedVersion(chunk.data))
      }
    }
    if (page.length < 100) return versions
    after = page[page.length - 1]!.id
  }
}
