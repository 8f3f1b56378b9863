import { describe, expect, it } from 'vitest'
import {
  applyTransform,
  type Principal,
  requireGrantWithin,
  requirePermission,
  requireReveal,
  requireTokenAccess,
  requireType,
  ruleMatches,
  shownUnderRead,
  tokenAccess,
  withoutData,
} from '../../src/access.js'
import { ExpressionBudget } from '../../src/budget.js'
import { ServiceError } from '../../src/errors.js'
import type { AccessRule, Condition, Permission, StoredToken, Transform } from '../../src/types.js'

/** `src/access.ts` on its own: which rule decides, what each transform shows, what may be granted. */
const rule = (
  scope: { container?: string; conditions?: Condition[] },
  permissions: Permission[],
  transform: Transform = 'reveal',
  priority = 1,
): AccessRule => ({ description: 'r', priority, transform, permissions, ...scope })
const app = (permissions: Permission[], rules?: AccessRule[]): Principal => ({
  tenantId: 't',
  id: 'app',
  kind: 'application',
  type: 'private',
  permissions,
  ...(rules ? { rules } : {}),
})
const token = (extra: Partial<StoredToken> = {}): StoredToken => ({
  id: 'tok',
  tenant_id: 't',
  type: 'token',
  data: { number: '4111111111111111' },
  containers: ['/a/'],
  metadata: {},
  created_by: 'app',
  created_at: '2030-01-01T00:00:00Z',
  ...extra,
})
function refusal(f: () => void): string | undefined {
  try {
    f()
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError)
    expect((error as ServiceError).code).toBe('forbidden')
    return (error as ServiceError).message
  }
  return undefined
}
const starts = (attribute: 'id' | 'container', value: string): Condition => ({
  attribute,
  operator: 'starts_with',
  value,
})
const equals = (attribute: 'id' | 'container', value: string): Condition => ({
  attribute,
  operator: 'equals',
  value,
})

describe('permissions and types', () => {
  it('name what is missing', () => {
    expect(refusal(() => requirePermission(app([]), 'reactor:read'))).toBe('missing permission reactor:read')
    expect(refusal(() => requirePermission(app(['reactor:read']), 'reactor:read'))).toBeUndefined()
    expect(refusal(() => requireType(app([]), ['private'], 'this'))).toBeUndefined()
    expect(
      refusal(() => requireType({ ...app([]), type: 'public' }, ['private', 'management'], 'this')),
    ).toBe('this needs a private or management application key')
    expect(refusal(() => requireType({ ...app([]), kind: 'session' }, ['private'], 'this'))).toBe(
      'this needs a private application key',
    )
    expect(refusal(() => requireTokenAccess(app([]), 'token:read', token()))).toBe(
      'missing token:read access to token tok',
    )
    expect(refusal(() => requireReveal(app(['token:read']), token(), 'doing it'))).toBe(
      'doing it needs token:read access with the reveal transform to token tok',
    )
  })
})

describe('which rule decides', () => {
  it('a rule matches on any of the token containers, and on all its conditions', () => {
    const t = { id: 'tok-1', containers: ['/x/', '/a/b/'] }
    expect(ruleMatches(rule({ container: '/a/' }, []), t)).toBe(true)
    expect(ruleMatches(rule({ container: '/c/' }, []), t)).toBe(false)
    expect(ruleMatches(rule({ conditions: [starts('container', '/a/')] }, []), t)).toBe(true)
    expect(
      ruleMatches(rule({ conditions: [starts('container', '/a/'), equals('id', 'tok-1')] }, []), t),
    ).toBe(true)
    expect(ruleMatches(rule({ conditions: [starts('container', '/a/'), equals('id', 'tok')] }, []), t)).toBe(
      false,
    )
    expect(ruleMatches(rule({}, []), t)).toBe(true)
  })

  it('the lowest priority number decides, the first listed on a tie; without rules, defaults', () => {
    const both = (a: Transform, b: Transform, pa: number, pb: number) =>
      tokenAccess(
        app(
          [],
          [rule({ container: '/' }, ['token:read'], a, pa), rule({ container: '/' }, ['token:read'], b, pb)],
        ),
        'token:read',
        token(),
      )
    expect(both('reveal', 'mask', 1, 1)).toBe('reveal')
    expect(both('mask', 'reveal', 1, 1)).toBe('mask')
    expect(both('mask', 'reveal', 2, 1)).toBe('reveal')
    expect(tokenAccess(app(['token:read', 'token:use', 'token:create']), 'token:read', token())).toBe('mask')
    expect(tokenAccess(app(['token:use']), 'token:use', token())).toBe('reveal')
    expect(tokenAccess(app(['token:create']), 'token:create', token())).toBe('reveal')
    expect(tokenAccess(app([]), 'token:create', token())).toBeNull()
  })
})

describe('what a transform shows', () => {
  it('no optional field appears unless the token has it; all appear when it does', () => {
    const bare = token()
    expect(Object.keys(applyTransform(bare, 'redact')).sort()).toEqual(
      ['containers', 'created_at', 'created_by', 'id', 'metadata', 'tenant_id', 'type'].sort(),
    )
    const full = token({
      mask: '{{ data.number | last4 }}',
      fingerprint: 'fp',
      fingerprint_expression: '{{ data.number }}',
      expires_at: '2031-01-01T00:00:00Z',
      search_indexes: ['{{ data.number }}'],
      modified_by: 'm',
      modified_at: '2030-06-01T00:00:00Z',
    })
    const shown = withoutData(full)
    expect(shown).toEqual({
      id: 'tok',
      tenant_id: 't',
      type: 'token',
      containers: ['/a/'],
      metadata: {},
      created_by: 'app',
      created_at: '2030-01-01T00:00:00Z',
      mask: '{{ data.number | last4 }}',
      fingerprint: 'fp',
      fingerprint_expression: '{{ data.number }}',
      expires_at: '2031-01-01T00:00:00Z',
      search_indexes: ['{{ data.number }}'],
      modified_by: 'm',
      modified_at: '2030-06-01T00:00:00Z',
    })
    expect(applyTransform(full, 'mask').data).toBe('1111')
    expect(applyTransform(full, 'reveal').data).toEqual({ number: '4111111111111111' })
    expect('data' in applyTransform(bare, 'mask')).toBe(false)
  })

  it('a mask that fails on its data hides the data (no data key); past the request budget the read fails', () => {
    const broken = token({ mask: '{{ data.number' })
    for (const budget of [undefined, new ExpressionBudget()]) {
      const shown = applyTransform(broken, 'mask', budget)
      expect(Object.hasOwn(shown, 'data')).toBe(false)
      expect(shown.mask).toBe('{{ data.number')
    }
    expect(applyTransform(broken, 'reveal').data).toEqual({ number: '4111111111111111' })
    // A mask that works, evaluated under a budget too small for it: the read fails, naming the limit.
    const spent = new ExpressionBudget(10)
    expect(() => applyTransform(token({ mask: '{{ data.number | last4 }}' }), 'mask', spent)).toThrow(
      /mask: is past the expression budget: .* at most 10 units/,
    )
    expect(spent.exhausted).toBe(true)
    // Once the budget is spent, a mask that fails fails the read (with its own error) rather than hiding.
    expect(() => applyTransform(broken, 'mask', spent)).toThrow('mask: has a "{{" without its "}}"')
  })

  it('a write answer shows no more than a read: redacted without read or under redact, masked otherwise', () => {
    const t = token({ mask: '{{ data.number | last4 }}' })
    expect('data' in shownUnderRead(app([]), t)).toBe(false)
    expect('data' in shownUnderRead(app([], [rule({ container: '/' }, ['token:read'], 'redact')]), t)).toBe(
      false,
    )
    expect(shownUnderRead(app([], [rule({ container: '/' }, ['token:read'], 'reveal')]), t).data).toBe('1111')
    expect(shownUnderRead(app(['token:read']), t).data).toBe('1111')
  })
})

describe('requireGrantWithin', () => {
  const grant = (permissions: Permission[], rules: AccessRule[] = []) => ({ permissions, rules })

  it('without rules: plain permissions and rule permissions must be held', () => {
    const grantor = app(['token:read'])
    expect(refusal(() => requireGrantWithin(grantor, grant(['token:read'])))).toBeUndefined()
    expect(refusal(() => requireGrantWithin(grantor, grant(['token:create'])))).toBe(
      'cannot grant token:create: the authorizing application does not hold it',
    )
    expect(
      refusal(() => requireGrantWithin(grantor, grant([], [rule({ container: '/a/' }, ['token:read'])]))),
    ).toBeUndefined()
    expect(
      refusal(() => requireGrantWithin(grantor, grant([], [rule({ container: '/a/' }, ['token:create'])]))),
    ).toBe('cannot grant token:create over this scope: the authorizing application does not hold it there')
  })

  it('with rules: a permission is held when any rule holds it; a rule scope must be covered by a rule holding it', () => {
    const grantor = app(
      [],
      [rule({ container: '/b/' }, ['token:read']), rule({ container: '/a/' }, ['token:read'])],
    )
    const ok = (...rules: AccessRule[]) => refusal(() => requireGrantWithin(grantor, grant([], rules)))
    expect(refusal(() => requireGrantWithin(grantor, grant(['token:read'])))).toBeUndefined()
    expect(refusal(() => requireGrantWithin(grantor, grant(['token:use'])))).toMatch(
      /^cannot grant token:use:/,
    )
    const mixed = app(
      [],
      [rule({ container: '/a/' }, ['token:read']), rule({ container: '/b/' }, ['token:create'])],
    )
    expect(refusal(() => requireGrantWithin(mixed, grant(['token:read', 'token:create'])))).toBeUndefined()
    expect(ok(rule({ container: '/a/x/' }, ['token:read']))).toBeUndefined()
    expect(ok(rule({ container: '/c/' }, ['token:read']))).toMatch(/over this scope/)
    expect(ok(rule({ conditions: [starts('container', '/a/x/')] }, ['token:read']))).toBeUndefined()
    expect(ok(rule({ conditions: [starts('container', '/a/x')] }, ['token:read']))).toMatch(/over this scope/)
    expect(ok(rule({ conditions: [starts('container', '/c/')] }, ['token:read']))).toMatch(/over this scope/)
    expect(ok(rule({ conditions: [starts('id', '/a/x/')] }, ['token:read']))).toMatch(/over this scope/)
    expect(ok(rule({ conditions: [] }, ['token:read']))).toMatch(/over this scope/)
    expect(ok(rule({}, ['token:read']))).toMatch(/over this scope/)
    // A rule over the scope that holds another permission does not cover it.
    const split = app(
      [],
      [rule({ container: '/a/' }, ['token:create']), rule({ container: '/z/' }, ['token:read'])],
    )
    expect(
      refusal(() => requireGrantWithin(split, grant([], [rule({ container: '/a/' }, ['token:read'])]))),
    ).toMatch(/over this scope/)
  })

  it('a grantor rule over everything (no scope, or /) covers any scope', () => {
    for (const scope of [{}, { container: '/' }]) {
      const grantor = app([], [rule(scope, ['token:read'])])
      expect(
        refusal(() =>
          requireGrantWithin(grantor, grant([], [rule({ conditions: [equals('id', 'x')] }, ['token:read'])])),
        ),
      ).toBeUndefined()
    }
  })

  it('grantor conditions must each be implied by the granted scope', () => {
    const byContainer = app([], [rule({ conditions: [starts('container', '/a/')] }, ['token:read'])])
    const byId = app([], [rule({ conditions: [equals('id', 'tok')] }, ['token:read'])])
    const byIdPrefix = app([], [rule({ conditions: [starts('id', 'tok')] }, ['token:read'])])
    const ok = (grantor: Principal, scope: { container?: string; conditions?: Condition[] }) =>
      refusal(() => requireGrantWithin(grantor, grant([], [rule(scope, ['token:read'])]))) === undefined
    expect(ok(byContainer, { container: '/a/b/' })).toBe(true)
    expect(ok(byContainer, { container: '/b/a/' })).toBe(false)
    expect(ok(byContainer, { conditions: [starts('container', '/a/c/')] })).toBe(true)
    expect(ok(byContainer, { conditions: [starts('container', '/b/')] })).toBe(false)
    expect(ok(byContainer, { conditions: [starts('id', '/a/')] })).toBe(false)
    expect(ok(byId, { conditions: [equals('id', 'tok')] })).toBe(true)
    expect(ok(byId, { conditions: [equals('id', 'other')] })).toBe(false)
    expect(ok(byId, { conditions: [starts('id', 'tok')] })).toBe(false)
    expect(ok(byId, { container: '/a/' })).toBe(false)
    expect(ok(byIdPrefix, { conditions: [equals('id', 'tok-1')] })).toBe(true)
    expect(ok(byIdPrefix, { conditions: [starts('id', 'tok-')] })).toBe(true)
    expect(ok(byIdPrefix, { conditions: [starts('id', 'x-tok')] })).toBe(false)
    // Every grantor condition must be implied, not just one.
    const both = app(
      [],
      [rule({ conditions: [starts('container', '/a/'), equals('id', 'tok')] }, ['token:read'])],
    )
    expect(ok(both, { container: '/a/' })).toBe(false)
    expect(ok(both, { conditions: [starts('container', '/a/b/'), equals('id', 'tok')] })).toBe(true)
    // A container scope implies only a container starts_with condition, never an id or equals one.
    expect(
      ok(app([], [rule({ conditions: [starts('id', '/a')] }, ['token:read'])]), { container: '/a/' }),
    ).toBe(false)
    expect(
      ok(app([], [rule({ conditions: [equals('container', '/a/')] }, ['token:read'])]), {
        container: '/a/b/',
      }),
    ).toBe(false)
  })
})
