// Reads sections and fenced code blocks out of README.md for test/readme.test.ts.

const FENCE = /^\s*```/

/** The lines of a heading's section: from the heading to the next heading of the same or a higher level. */
export function section (markdown: string, heading: string): string {
  const lines = markdown.split('\n')
  let inFence = false
  let start = -1
  let level = 0
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    if (FENCE.test(line)) inFence = !inFence
    if (inFence) continue
    const match = /^(#{1,6}) (.*)$/.exec(line)
    if (!match) continue
    if (start === -1) {
      if (match[2].trim() === heading) { start = i; level = match[1].length }
    } else if (match[1].length <= level) {
      return lines.slice(start, i).join('\n')
    }
  }
  if (start === -1) throw new Error(`README.md has no heading "${heading}"`)
  return lines.slice(start).join('\n')
}

/** The contents of the fenced blocks with this info string (e.g. sh), in order, indentation removed. */
export function fenced (markdown: string, lang: string): string[] {
  const blocks: string[] = []
  const lines = markdown.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i])
    if (!open) continue
    const indent = open[1].length
    const body: string[] = []
    let j = i + 1
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j])) body.push(lines[j++].slice(indent))
    if (open[2] === lang) blocks.push(body.join('\n'))
    i = j
  }
  return blocks
}
