import { createRequire } from 'node:module'

/**
 * Text in the code page of a SQL Server `varchar`, `char` or `text` column (1252, 1250, 932, …).
 * SQL Server converts what the gateway sends (nvarchar) into the column's code page and stores
 * `?`, or a look-alike, for a character the code page lacks, without an error: the gateway checks
 * first. iconv-lite (the encoder the SQL Server driver itself uses) loads on first use, as the
 * driver does, so installations on SQLite never load it.
 */

type Iconv = typeof import('iconv-lite')

let iconv: Iconv | undefined
const load = (): Iconv => (iconv ??= createRequire(import.meta.url)('iconv-lite') as Iconv)

const ASCII = /^[\x00-\x7f]*$/

/** Whether the gateway can check text against this code page (Windows code pages iconv-lite knows). */
export function knownCodePage (codePage: number): boolean {
  return Number.isInteger(codePage) && codePage > 0 && codePage !== 65001 && load().encodingExists(`cp${codePage}`)
}

/** The first character of `text` that the code page cannot hold, or undefined when it holds them all. */
export function unstorableCharacter (text: string, codePage: number): string | undefined {
  // every Windows code page SQL Server uses keeps ASCII as it is
  if (ASCII.test(text)) return undefined
  const { encode, decode } = load()
  const cp = `cp${codePage}`
  if (decode(encode(text, cp), cp) === text) return undefined
  for (const ch of text) {
    if (decode(encode(ch, cp), cp) !== ch) return ch
  }
  /* c8 ignore next: a string differs only where one of its characters does */
  return undefined
}

/** Japanese, Simplified and Traditional Chinese, Korean: a varchar(n) holds n bytes, most characters two. */
const DOUBLE_BYTE = new Set([932, 936, 949, 950])

export function isDoubleByte (codePage: number): boolean {
  return DOUBLE_BYTE.has(codePage)
}

/** The bytes `text` takes in the code page (two for most characters of 932, 936, 949 and 950). */
export function codePageLength (text: string, codePage: number): number {
  if (ASCII.test(text)) return text.length
  return load().encode(text, `cp${codePage}`).length
}

/** A character as messages show it: itself and its code point (`'Ω' (U+03A9)`). */
export function describeCharacter (ch: string): string {
  const hex = ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')
  return `'${ch}' (U+${hex})`
}
