// Deterministic demo data for the embedded demo and `db init --demo`: warehouse materials and picking stations.
import { dialectFor } from './dialect.js'
import { materials as materialsDef, stations as stationsDef, type ResourceName } from './resources.js'
import { SqlBuilder } from './sql.js'
import type { Database, SqlValue, TableMapping } from './types.js'

/** mulberry32: small, fast, and the same sequence everywhere for a seed. */
export function prng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The EAN-13 check digit of 12 digits: weights 1,3,1,3,… from the left. */
export function ean13CheckDigit (digits12: string): number {
  if (!/^\d{12}$/.test(digits12)) throw new Error('expected 12 digits')
  let sum = 0
  for (let i = 0; i < 12; i++) sum += Number(digits12[i]) * (i % 2 === 0 ? 1 : 3)
  return (10 - (sum % 10)) % 10
}

type Rand = () => number

const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]
const int = (r: Rand, min: number, max: number): number => min + Math.floor(r() * (max - min + 1))
const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits

interface Item { name: string, description: string, unit: string, weight: number | null }

const METRIC = ['M4', 'M5', 'M6', 'M8', 'M10', 'M12', 'M16'] as const
const MASS: Record<string, number> = { M4: 0.002, M5: 0.003, M6: 0.005, M8: 0.011, M10: 0.019, M12: 0.03, M16: 0.06 }

const generators: Array<(r: Rand) => Item> = [
  (r) => {
    const m = pick(r, METRIC)
    const len = pick(r, [12, 16, 20, 25, 30, 40, 50, 60, 80, 100])
    const [kind, norm] = pick(r, [['Hex bolt', 'DIN 933'], ['Socket head cap screw', 'DIN 912'], ['Countersunk screw', 'DIN 7991'], ['Set screw', 'DIN 913']] as const)
    const finish = pick(r, ['zinc plated', 'A2 stainless', 'A4 stainless', '8.8 black'])
    return { name: `${kind} ${m}x${len} ${norm}`, description: `${kind}, ${finish}, property class per ${norm}`, unit: pick(r, ['pcs', 'box']), weight: round(MASS[m] * len / 20, 4) }
  },
  (r) => {
    const m = pick(r, METRIC)
    const [kind, norm] = pick(r, [['Hex nut', 'DIN 934'], ['Lock nut', 'DIN 985'], ['Washer', 'DIN 125'], ['Spring washer', 'DIN 127']] as const)
    return { name: `${kind} ${m} ${norm}`, description: `${kind} ${m}, ${pick(r, ['zinc plated', 'A2 stainless'])}`, unit: pick(r, ['pcs', 'box']), weight: round(MASS[m] / 2, 4) }
  },
  (r) => {
    const dn = pick(r, [10, 15, 20, 25, 32, 40, 50])
    const [kind, material] = [pick(r, ['Ball valve', 'Check valve', 'Gate valve', 'Butterfly valve', 'Needle valve']), pick(r, ['brass', 'stainless steel 1.4408', 'cast iron', 'PVC-U'])]
    return { name: `${kind} DN${dn} PN${pick(r, [10, 16, 40])} ${material}`, description: `${kind}, nominal size DN${dn}, ${pick(r, ['female thread', 'flanged', 'press fitting'])}`, unit: 'pcs', weight: round(dn * 0.03 + r() * 0.5, 2) }
  },
  (r) => {
    const v = pick(r, ['12V DC', '24V DC', '230V AC'])
    return { name: `Solenoid valve ${v} G${pick(r, ['1/8', '1/4', '1/2'])}`, description: `2/2-way solenoid valve, normally ${pick(r, ['closed', 'open'])}, coil ${v}`, unit: 'pcs', weight: round(0.2 + r() * 0.6, 2) }
  },
  (r) => {
    const series = pick(r, ['6001', '6002', '6203', '6204', '6205', '6305', '6306', '6008'])
    const seal = pick(r, ['2RS', 'ZZ', 'open'])
    return { name: `Deep groove ball bearing ${series}${seal === 'open' ? '' : `-${seal}`}`, description: `Single row deep groove ball bearing ${series}, ${seal === '2RS' ? 'rubber sealed both sides' : seal === 'ZZ' ? 'metal shields both sides' : 'open'}`, unit: 'pcs', weight: round(0.02 + r() * 0.3, 3) }
  },
  (r) => {
    const [kind, code] = pick(r, [['Pillow block bearing', `UCP${int(r, 204, 210)}`], ['Needle bearing', `HK${pick(r, ['0808', '1012', '1512', '2016'])}`], ['Tapered roller bearing', `302${int(r, 3, 9).toString().padStart(2, '0')}`]] as const)
    return { name: `${kind} ${code}`, description: `${kind} ${code}, standard clearance`, unit: 'pcs', weight: round(0.05 + r() * 1.5, 3) }
  },
  (r) => {
    const cores = pick(r, ['3G1.5', '3G2.5', '5G1.5', '5G2.5', '4G4', '7x0.25', '12x0.5'])
    const type = pick(r, ['H07RN-F', 'NYM-J', 'LiYY', 'LiYCY', 'ÖLFLEX CLASSIC 110'])
    return { name: `Cable ${type} ${cores} mm²`, description: `${type} ${cores} mm², sold by the metre`, unit: 'm', weight: round(0.05 + r() * 0.3, 3) }
  },
  (r) => {
    const len = pick(r, [0.5, 1, 2, 3, 5, 10])
    return { name: `Patch cable Cat${pick(r, ['6', '6A', '7'])} S/FTP ${len} m ${pick(r, ['grey', 'blue', 'yellow', 'green'])}`, description: 'RJ45 patch cable, LSZH jacket', unit: 'pcs', weight: round(0.03 * len + 0.02, 3) }
  },
  (r) => {
    const size = pick(r, ['S', 'M', 'L', 'XL', '7', '8', '9', '10'])
    const [kind, extra] = pick(r, [['Nitrile gloves', 'disposable, powder-free, box of 100'], ['Cut-resistant gloves', 'cut level C, PU coated'], ['Leather work gloves', 'cowhide, lined'], ['Chemical gloves', 'butyl, EN 374']] as const)
    return { name: `${kind} size ${size}`, description: `${kind}, ${extra}`, unit: kind === 'Nitrile gloves' ? 'box' : 'pcs', weight: round(0.05 + r() * 0.4, 3) }
  },
  (r) => {
    const d = pick(r, [6, 8, 10, 13, 19, 25])
    return { name: `${pick(r, ['PVC hose', 'Compressed air hose PU', 'Hydraulic hose 2SN'])} ${d} mm`, description: `Hose, inner diameter ${d} mm, by the metre`, unit: 'm', weight: round(d * 0.012, 3) }
  },
  (r) => {
    const id = pick(r, [10, 12, 16, 20, 25, 32, 40])
    return { name: `O-ring ${id}x${pick(r, [1.5, 2, 2.5, 3])} ${pick(r, ['NBR 70', 'FKM 80', 'EPDM 70'])}`, description: `O-ring, inner diameter ${id} mm`, unit: pick(r, ['pcs', 'box']), weight: 0.001 }
  },
  (r) => ({ name: `Cable ties ${pick(r, [2.5, 3.6, 4.8, 7.6])}x${pick(r, [100, 200, 300, 370])} mm ${pick(r, ['black', 'natural'])}`, description: 'Polyamide 6.6 cable ties, bag of 100', unit: 'box', weight: round(0.05 + r() * 0.3, 3) }),
  (r) => ({ name: `Fuse ${pick(r, ['5x20', '6.3x32', 'NH00'])} ${pick(r, [1, 2, 4, 6.3, 10, 16])} A ${pick(r, ['slow', 'fast'])}`, description: 'Cartridge fuse', unit: 'pcs', weight: 0.005 }),
  (r) => ({ name: `Hydraulic oil HLP ${pick(r, [32, 46, 68])}`, description: `Hydraulic oil per DIN 51524-2, ${pick(r, [5, 20, 208])} l container`, unit: 'l', weight: null }),
  (r) => ({ name: `Grease ${pick(r, ['lithium EP2', 'food grade H1', 'high temperature'])} cartridge 400 g`, description: 'Lubricating grease', unit: 'kg', weight: 0.4 }),
  (r) => ({ name: `Packing tape ${pick(r, [48, 50, 75])} mm x 66 m ${pick(r, ['brown', 'clear', 'printed "FRAGILE"'])}`, description: 'Polypropylene packing tape', unit: 'pcs', weight: 0.2 }),
  (r) => ({ name: `Air filter element ${pick(r, ['F7', 'M5', 'G4'])} ${pick(r, [287, 592])}x${pick(r, [287, 592])}`, description: 'Pocket filter for ventilation unit', unit: 'pcs', weight: round(0.5 + r() * 1.5, 2) }),
  (r) => ({ name: `Steel wire ${pick(r, [1, 1.5, 2, 3])} mm galvanized`, description: 'Binding wire, sold by the kilogram', unit: 'kg', weight: null })
]

const BLOCK_REASONS = [
  'Quality hold: supplier complaint',
  'Recall by manufacturer',
  'Inventory count in progress',
  'Discontinued, use successor',
  'Damaged stock awaiting inspection'
]

const DAY = 86_400_000

export interface DemoOptions {
  seed?: number
  /** the reference time for createdAt/modifiedAt (default: now); with the same seed and time the data is identical */
  now?: Date
  count?: number
}

export function demoMaterials (opts: DemoOptions = {}): Array<Record<string, SqlValue>> {
  const r = prng(opts.seed ?? 20240611)
  const now = (opts.now ?? new Date()).getTime()
  const count = opts.count ?? 1200
  const out: Array<Record<string, SqlValue>> = []
  let number = 100000
  for (let i = 0; i < count; i++) {
    number += int(r, 1, 7)
    const item = pick(r, generators)(r)
    const fractional = item.unit === 'kg' || item.unit === 'm' || item.unit === 'l'
    const minStock = pick(r, [0, 5, 10, 20, 50, 100, 200])
    const maxStock = Math.max(10, minStock * int(r, 2, 6))
    const stock = r() * maxStock * 1.2
    const blocked = r() < 0.02
    const created = now - int(r, 30, 540) * DAY - int(r, 0, DAY - 1)
    const modified = r() < 0.3 ? created : created + Math.floor(r() * (now - created))
    const prefix = `40${String(int(r, 0, 9999999999)).padStart(10, '0')}`
    out.push({
      materialNumber: `M-${number}`,
      name: item.name,
      description: r() < 0.9 ? item.description : null,
      unit: item.unit,
      barcode: r() < 0.9 ? `${prefix}${ean13CheckDigit(prefix)}` : null,
      minStock,
      maxStock,
      weight: item.weight,
      blocked,
      blockReason: blocked ? pick(r, BLOCK_REASONS) : null,
      stockQuantity: fractional ? round(stock, 2) : Math.floor(stock),
      createdAt: new Date(created),
      modifiedAt: new Date(modified)
    })
  }
  return out
}

export function demoStations (opts: DemoOptions = {}): Array<Record<string, SqlValue>> {
  const now = (opts.now ?? new Date()).getTime()
  const rows: Array<[string, string, string, string, string | null, number | null, boolean]> = [
    ['VLM-01', 'Vertical lift module, small parts', 'vlm', 'WH1', 'ctl-1', 1, true],
    ['VLM-02', 'Vertical lift module, bulky parts', 'vlm', 'WH1', 'ctl-1', 2, true],
    ['CAR-01', 'Horizontal carousel, fasteners', 'carousel', 'WH1', 'ctl-1', 3, true],
    ['PTL-A', 'Pick-to-light shelf, aisle A', 'ptl', 'WH1', 'ctl-2', 1, true],
    ['PTL-B', 'Pick-to-light shelf, aisle B', 'ptl', 'WH1', 'ctl-2', 2, true],
    ['CAR-02', 'Vertical carousel, under maintenance', 'carousel', 'WH2', 'ctl-2', 3, false],
    ['MAN-01', 'Manual picking, bulk rack', 'manual', 'WH2', null, null, true],
    ['MAN-02', 'Goods-in inspection table', 'manual', 'WH2', null, null, true]
  ]
  return rows.map(([name, description, type, warehouse, controllerId, address, enabled], i) => ({
    name,
    description,
    type,
    warehouse,
    controllerId,
    address,
    enabled,
    createdAt: new Date(now - (200 - i) * DAY),
    modifiedAt: new Date(now - (20 - i) * DAY)
  }))
}

/** Rows per statement: stays under SQL Server's 2100 parameters per request. */
function batchSize (fields: number): number {
  return Math.max(1, Math.floor(2000 / fields))
}

/** Inserts the demo materials and stations in one transaction, as parameterized multi-row inserts. */
export async function seedDemoData (db: Database, mappings: Record<ResourceName, TableMapping>, opts: DemoOptions = {}): Promise<{ materials: number, stations: number }> {
  const dialect = dialectFor(db.dialect)
  const sets = [
    { builder: new SqlBuilder(dialect, materialsDef, mappings.materials), rows: demoMaterials(opts) },
    { builder: new SqlBuilder(dialect, stationsDef, mappings.stations), rows: demoStations(opts) }
  ]
  await db.transaction(async (tx) => {
    for (const { builder, rows } of sets) {
      const fields = Object.keys(rows[0])
      const size = batchSize(fields.length)
      for (let i = 0; i < rows.length; i += size) await tx.execute(builder.insertMany(fields, rows.slice(i, i + size)))
    }
  })
  return { materials: sets[0].rows.length, stations: sets[1].rows.length }
}
