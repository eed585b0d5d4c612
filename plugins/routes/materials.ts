// /api/materials: the picking system's material master.
import { Material, MaterialCreate, MaterialUpdate } from '../../schemas/materials.js'
import type { Row } from '../../src/db/types.js'
import { resourceRoutes } from './resource.js'

/** A repository row is already the public material: every field, in order, NULL as null. */
export function toMaterial (row: Row): Material {
  return row as Material
}

export default resourceRoutes({
  noun: 'material',
  tag: 'materials',
  repo: (fastify) => fastify.repos.materials,
  item: Material,
  create: MaterialCreate,
  update: MaterialUpdate,
  toPublic: () => toMaterial,
  writers: ['admin', 'user', 'application'],
  storedOnly: true,
  ordered: [['minStock', 'maxStock']]
})
