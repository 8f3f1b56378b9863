import { describe, expect, it } from 'vitest'
import type { Principal } from '../../src/call/index.js'
import type { AccessRule, Permission } from '../../src/kernel/index.js'
import { reachOf } from '../../src/search/reach.js'

const key = (permissions: Permission[], rules?: AccessRule[]): Principal => ({
  tenantId: 't',
  id: 'a',
  kind: 'application',
  type: 'private',
  permissions,
  ...(rules ? { rules } : {}),
})
const rule = (scope: Partial<AccessRule>, permissions: Permission[] = ['token:read', 'token:search']) =>
  ({ description: 'r', priority: 1, transform: 'reveal', permissions, ...scope }) as AccessRule
const both: Permission[] = ['token:search', 'token:read']

describe('reachOf: whether a key may search and read every token, some, or none', () => {
  it('permissions alone reach every token or none', () => {
    expect(reachOf(key(['token:read', 'token:search']), both)).toBe('every')
    expect(reachOf(key(['token:search']), both)).toBe('none')
  })

  it('rules reach every token only when, for each permission, a granting rule covers every token', () => {
    expect(reachOf(key([], [rule({ container: '/' })]), both)).toBe('every')
    expect(reachOf(key([], [rule({})]), both)).toBe('every')
    const all = [{ attribute: 'container', operator: 'starts_with', value: '/' }] as const
    expect(reachOf(key([], [rule({ conditions: [...all] })]), both)).toBe('every')
    expect(
      reachOf(
        key([], [rule({ container: '/' }, ['token:read']), rule({ container: '/' }, ['token:search'])]),
        both,
      ),
    ).toBe('every')
    // A narrower scope, or a catch-all granting one permission only: some tokens.
    expect(reachOf(key([], [rule({ container: '/general/' })]), both)).toBe('some')
    const id = [{ attribute: 'id', operator: 'equals', value: '' }] as const
    expect(reachOf(key([], [rule({ conditions: [...id] })]), both)).toBe('some')
    const cont = [{ attribute: 'container', operator: 'starts_with', value: '/g' }] as const
    expect(reachOf(key([], [rule({ conditions: [...cont] })]), both)).toBe('some')
    expect(
      reachOf(
        key([], [rule({ container: '/' }, ['token:read']), rule({ container: '/pci/' }, ['token:search'])]),
        both,
      ),
    ).toBe('some')
    // No rule grants reading: none, whatever the permissions say (rules alone decide).
    expect(reachOf(key(['token:read'], [rule({ container: '/' }, ['token:search'])]), both)).toBe('none')
  })
})
