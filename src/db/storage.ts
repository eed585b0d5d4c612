// What the database says about the mapped tables: checked once at start (serve, check-config), never per request.
import { resources, type ResourceName } from './resources.js'
import type { ColumnInfo, Database, TableMapping } from './types.js'

export interface StorageReport {
  /** human-readable problems, each naming the resource and field or column; empty when the mapping fits */
  problems: string[]
  /** every resource's table columns as the database declares them */
  columns: Record<ResourceName, ColumnInfo[]>
}

/**
 * Reads every mapped table's columns and checks the mapping against them. Rejects with
 * DatabaseUnavailableError when the database cannot be reached.
 */
export async function inspectStorage (db: Database, mappings: Record<ResourceName, TableMapping>): Promise<StorageReport> {
  const problems: string[] = []
  const columns = {} as Record<ResourceName, ColumnInfo[]>
  for (const name of Object.keys(resources) as ResourceName[]) {
    problems.push(...await db.checkMapping(resources[name], mappings[name]))
    columns[name] = await db.columns(mappings[name])
  }
  return { problems, columns }
}
