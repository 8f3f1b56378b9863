export type { DocumentSource, DocumentUpload, ShownDocument } from './documents.js'
export {
  DOCUMENT_CHUNK_BYTES,
  documentContentType,
  documentOperations,
  documentRequestInput,
  MAX_DOCUMENT_BYTES,
} from './documents.js'
