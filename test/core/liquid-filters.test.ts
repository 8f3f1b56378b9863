/**
 * Liquid's standard filters, against the outputs Liquid's documentation shows
 * (shopify.github.io/liquid/filters/…), and the `date` filter's directives in UTC whatever the host
 * time zone.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { evaluateTemplate } from '../../src/expressions/index.js'
import type { Json } from '../../src/kernel/types.js'

const ev = (template: string, data: Json) => evaluateTemplate(template, { data }, 'field')

describe('Liquid text filters', () => {
  it.each([
    ['{{ data | truncatewords: 3 }}', 'Ground control to Major Tom.', 'Ground control to...'],
    ['{{ data | truncatewords: 3, "--" }}', 'Ground control to Major Tom.', 'Ground control to--'],
    ['{{ data | truncatewords: 3, "" }}', 'Ground control to Major Tom.', 'Ground control to'],
    ['{{ data | truncatewords: 5 }}', 'Ground control to Major Tom.', 'Ground control to Major Tom.'],
    ['{{ data | strip_html }}', 'Have <em>you</em> read <strong>Ulysses</strong>?', 'Have you read Ulysses?'],
    ['{{ data | strip_html }}', 'a<script>alert(1)</script>b<!-- c -->d<style>p{}</style>e', 'abde'],
    ['{{ data | escape_once }}', '1 < 2 & 3', '1 &lt; 2 &amp; 3'],
    ['{{ data | escape_once }}', '1 &lt; 2 &amp; 3', '1 &lt; 2 &amp; 3'],
    ['{{ data | newline_to_br }}', '\nHello\nthere\n', '<br />\nHello<br />\nthere<br />\n'],
    ['{{ data | newline_to_br }}', 'a\r\nb', 'a<br />\nb'],
  ])('%s of %j is %j', (template, data, expected) => {
    expect(ev(template, data)).toBe(expected)
  })

  // That it takes time linear in its text is timed in liquid-filters.slow.test.ts.
  it('strip_html strips tags that never close', () => {
    expect(ev('{{ data | strip_html }}', '<script'.repeat(100_000))).toBe('')
  })
})

describe('Liquid date', () => {
  const zone = process.env.TZ
  afterEach(() => {
    if (zone === undefined) delete process.env.TZ
    else process.env.TZ = zone
  })

  it.each([
    ['%a, %b %d, %y', 'Fri, Jul 17, 15'],
    ['%Y', '2015'],
    ['%Y-%m-%d %H:%M:%S.%L', '2015-07-17 15:04:05.123'],
    ['%A %B %-d, %-m/%e', 'Friday July 17, 7/17'],
    ['%I:%M %p / %P', '03:04 PM / pm'],
    ['%j %u %w', '198 5 5'],
    ['%F %T %z %Z', '2015-07-17 15:04:05 +0000 UTC'],
    ['%s', '1437145445'],
    ['100%% %q', '100% %q'],
  ])('%s → %s', (pattern, expected) => {
    for (const tz of ['UTC', 'America/Los_Angeles', 'Asia/Kolkata']) {
      process.env.TZ = tz
      expect(ev(`{{ data | date: "${pattern}" }}`, '2015-07-17T15:04:05.123Z'), tz).toBe(expected)
    }
  })

  it('takes seconds since the epoch, and answers anything that is not a date unchanged', () => {
    expect(ev('{{ data | date: "%Y-%m-%d" }}', 1437145445)).toBe('2015-07-17')
    expect(ev('{{ data | date: "%Y-%m-%d" }}', '1437145445')).toBe('2015-07-17')
    expect(ev('{{ data | date: "%Y" }}', 'not a date')).toBe('not a date')
    expect(ev('{{ data | date: "%-d %e" }}', '2015-07-05')).toBe('5  5')
  })
})

describe('Liquid division', () => {
  // shopify.github.io/liquid/filters/divided_by: an integer divisor rounds down, a float one doesn't.
  it.each([
    ['{{ 16 | divided_by: 4 }}', 4],
    ['{{ 5 | divided_by: 3 }}', 1],
    ['{{ 20 | divided_by: 7 }}', 2],
    ['{{ 20 | divided_by: 7.0 }}', 20 / 7],
    ['{{ 7 | divided_by: 2.0 }}', 3.5],
    ['{{ -7 | divided_by: 2 }}', -4],
    ['{{ 7.5 | divided_by: 2 }}', 3.75],
  ])('%s is %d', (template, expected) => {
    expect(ev(template, null)).toBe(expected)
  })

  it('a divisor read from data divides as the number it holds', () => {
    expect(ev('{{ data.a | divided_by: data.b }}', { a: 7, b: 2 })).toBe(3)
    expect(ev('{{ data.a | divided_by: data.b }}', { a: 7, b: 2.5 })).toBe(2.8)
  })
})
