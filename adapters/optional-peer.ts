/**
 * What an adapter throws when an optional peer dependency it needs is not installed: the package,
 * the adapter and the command to install it, instead of the loader's bare "Cannot find package".
 * Any other error (the package there but broken, or a module of ours missing) goes through as it is.
 */
export function missingPeer(error: unknown, pkg: string, range: string, adapter: string): unknown {
  const code = (error as { code?: unknown } | null)?.code
  const message = error instanceof Error ? error.message : ''
  const notFound = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'
  if (!notFound || !message.includes(`'${pkg}'`)) return error
  return Object.assign(
    new Error(
      `${adapter} needs the package ${pkg}, an optional peer dependency of tokenvault that is not installed: npm install ${pkg}@${range}`,
      { cause: error },
    ),
    { code: 'ERR_MISSING_PEER', package: pkg },
  )
}
