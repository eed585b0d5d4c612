// /api/materials: the picking system's material master.
import { Material, MaterialCreate, MaterialUpdate } from '../../schemas/materials.js'
import type { Row } from '../../src/db/types.js'
import { resourceRoutes } from './resource.js'

const FIELDS = Object.keys(Material.properties)

export function toMaterial (row: Row): Material {
  return Object.fromEntries(FIELDS.map((field) => [field, row[field] ?? null])) as Material
}

export default resourceRoutes({
  noun: 'material',
  tag: 'materials',
  repo: (fastify) => fastify.repos.materials,
  item: Material,
  create: MaterialCreate,
  update: MaterialUpdate,
  defaults: { unit: 'pcs', blocked: false },
  toPublic: () => toMaterial,
  writers: ['admin', 'user', 'application']
})
