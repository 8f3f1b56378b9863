/**
 * Hosts of URLs as the WHATWG URL standard (and Node's `URL`) parses them: domains (lower-cased),
 * IPv4 addresses in every form the standard takes (`127.1`, `0x7f.1`, `017700000001`), and IPv6
 * addresses (compressed the standard's way). International domain names are refused (`TypeError`)
 * rather than answered differently from Node: formulas write them in their `xn--` form.
 */

const failure = (input) => new TypeError(`Invalid URL: ${String(input).slice(0, 200)}`)

/** An IPv4 address part: decimal, `0x` hex or `0` octal; null when it is none. */
function ipv4Number(text) {
  if (text === '') return null
  let radix = 10
  if (text.length >= 2 && (text.startsWith('0x') || text.startsWith('0X'))) {
    text = text.slice(2)
    radix = 16
  } else if (text.length >= 2 && text.startsWith('0')) {
    text = text.slice(1)
    radix = 8
  }
  if (text === '') return 0
  const digits = radix === 16 ? /^[0-9a-fA-F]+$/ : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/
  return digits.test(text) ? parseInt(text, radix) : null
}

/** Whether a domain's last label is a number, which makes the whole host an IPv4 address. */
function endsInNumber(host) {
  const parts = host.split('.')
  if (parts[parts.length - 1] === '' && parts.length > 1) parts.pop()
  const last = parts[parts.length - 1]
  return /^[0-9]+$/.test(last) || ipv4Number(last) !== null
}

function parseIpv4(host, input) {
  const parts = host.split('.')
  if (parts[parts.length - 1] === '' && parts.length > 1) parts.pop()
  if (parts.length > 4) throw failure(input)
  const numbers = parts.map(ipv4Number)
  if (numbers.some((n) => n === null)) throw failure(input)
  const last = numbers.pop()
  if (numbers.some((n) => n > 255) || last >= 256 ** (4 - numbers.length)) throw failure(input)
  let address = last
  numbers.forEach((n, i) => {
    address += n * 256 ** (3 - i)
  })
  const bytes = []
  for (let i = 0; i < 4; i++) {
    bytes.unshift(address % 256)
    address = Math.floor(address / 256)
  }
  return bytes.join('.')
}

/** The eight 16-bit pieces of an IPv6 address (the text between the brackets). */
function parseIpv6(s, input) {
  const address = [0, 0, 0, 0, 0, 0, 0, 0]
  const hex = /[0-9a-fA-F]/
  const digit = /[0-9]/
  let piece = 0
  let compress = null
  let i = 0
  if (s[i] === ':') {
    if (s[i + 1] !== ':') throw failure(input)
    i += 2
    piece++
    compress = piece
  }
  while (i < s.length) {
    if (piece === 8) throw failure(input)
    if (s[i] === ':') {
      if (compress !== null) throw failure(input)
      i++
      piece++
      compress = piece
      continue
    }
    let value = 0
    let length = 0
    while (length < 4 && i < s.length && hex.test(s[i])) {
      value = value * 16 + parseInt(s[i], 16)
      i++
      length++
    }
    if (s[i] === '.') {
      if (length === 0 || piece > 6) throw failure(input)
      i -= length
      let seen = 0
      while (i < s.length) {
        let part = null
        if (seen > 0) {
          if (s[i] === '.' && seen < 4) i++
          else throw failure(input)
        }
        if (i >= s.length || !digit.test(s[i])) throw failure(input)
        while (i < s.length && digit.test(s[i])) {
          const n = Number(s[i])
          if (part === null) part = n
          else if (part === 0) throw failure(input)
          else part = part * 10 + n
          if (part > 255) throw failure(input)
          i++
        }
        address[piece] = address[piece] * 256 + part
        seen++
        if (seen === 2 || seen === 4) piece++
      }
      if (seen !== 4) throw failure(input)
      break
    }
    if (s[i] === ':') {
      i++
      if (i >= s.length) throw failure(input)
    } else if (i < s.length) throw failure(input)
    address[piece] = value
    piece++
  }
  if (compress !== null) {
    let swaps = piece - compress
    piece = 7
    while (piece !== 0 && swaps > 0) {
      const other = compress + swaps - 1
      const kept = address[piece]
      address[piece] = address[other]
      address[other] = kept
      piece--
      swaps--
    }
  } else if (piece !== 8) throw failure(input)
  return address
}

/** An IPv6 address as the standard writes it: lower-case hex, the first longest run of zeros as `::`. */
function serializeIpv6(address) {
  let best = -1
  let bestLength = 1
  for (let i = 0; i < 8; ) {
    if (address[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && address[j] === 0) j++
    if (j - i > bestLength) {
      best = i
      bestLength = j - i
    }
    i = j
  }
  let out = ''
  for (let i = 0; i < 8; i++) {
    if (best !== -1 && i > best && i < best + bestLength) continue
    if (i === best) {
      out += i === 0 ? '::' : ':'
      continue
    }
    out += address[i].toString(16)
    if (i !== 7) out += ':'
  }
  return out
}

/**
 * The host of a URL as Node's `URL` answers it (`raw` as written between `//` or `@` and the port);
 * `special` for http(s), ws(s), ftp and file URLs, whose hosts are domains or IP addresses.
 */
export function parseHost(raw, special, input) {
  if (raw.startsWith('[')) {
    if (!raw.endsWith(']')) throw failure(input)
    return `[${serializeIpv6(parseIpv6(raw.slice(1, -1), input))}]`
  }
  if (!special) return raw
  let host
  try {
    host = decodeURIComponent(raw)
  } catch (_e) {
    throw failure(input)
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: only ASCII hosts are taken
  if (/[^\x00-\x7f]/.test(host))
    throw new TypeError(
      `Invalid URL: international domain names are not supported in formulas (write the xn-- form): ${String(input).slice(0, 200)}`,
    )
  host = host.toLowerCase()
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the WHATWG forbidden domain code points include them
  if (!host || /[\x00-\x20#%/:<>?@[\\\]^|\x7f]/.test(host)) throw failure(input)
  return endsInNumber(host) ? parseIpv4(host, input) : host
}
