/** Every input type of the client's and the admin's methods, from the folder that validates it. */

export type {
  AdminCreateApplicationInput,
  CreateApplicationInput,
  CreateTenantInput,
  ListApplicationsQuery,
  ListPermissionsQuery,
  UpdateApplicationInput,
} from '../applications/index.js'
export type { EmptyInput } from '../kernel/index.js'
export type {
  CreateReactorInput,
  ListReactorFormulasQuery,
  ListReactorsQuery,
  OfficialFormulaInput,
  PatchReactorInput,
  ReactInput,
  ReactorFormulaInput,
  UpdateReactorInput,
} from '../reactors/index.js'
export type { AuthorizeSessionInput } from '../sessions/index.js'
export type {
  ConvertTokenIntentInput,
  CreateTokenInput,
  CreateTokenIntentInput,
  DetokenizeInput,
  FlatMetadataFilter,
  ListChildrenQuery,
  ListTokensQuery,
  ListTokensV2Query,
  SearchTokensInput,
  SearchTokensV2Input,
  TokenizeInput,
  UpdateTokenInput,
} from '../tokens/index.js'
