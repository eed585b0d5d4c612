// A picking system's own tables as they are in the field (German names, CHAR(1) codes, DECIMAL, local DATETIME, triggers, a foreign key), for SQLite and SQL Server, with the mapping onto them and their rows.
import type { TableMappingConfig } from '../../schemas/config.js'
import type { Database, DialectName, Param } from '../../src/db/types.js'

export const LEGACY_SCHEMA = 'wms'

/** The picking system's time zone: its DATETIME columns hold Berlin wall-clock time. */
export const LEGACY_TIME_ZONE = 'Europe/Berlin'

export const BLOCKED_MESSAGE = 'Artikel gesperrt: Artikelnummer und Mengeneinheit eines gesperrten Artikels dürfen nicht geändert werden'

/** materials on the article master `Artikel`: Berlin local times, blocked as J/N. */
export const MATERIALS_MAPPING: TableMappingConfig = {
  schema: LEGACY_SCHEMA,
  table: 'Artikel',
  timeZone: LEGACY_TIME_ZONE,
  columns: {
    id: 'ArtID',
    materialNumber: 'ArtNr',
    name: 'Bezeichnung',
    description: 'Beschreibung',
    unit: 'ME',
    barcode: 'EAN',
    minStock: 'MinBestand',
    maxStock: 'MaxBestand',
    weight: 'Gewicht',
    blocked: { column: 'Gesperrt', values: { true: 'J', false: 'N' } },
    blockReason: 'Sperrgrund',
    stockQuantity: 'Bestand',
    createdAt: 'Angelegt',
    modifiedAt: 'LastChange'
  }
}

/** stations on `Arbeitsplatz`: type and active flag as codes (an older program wrote 'Y'), times in UTC. */
export const STATIONS_MAPPING: TableMappingConfig = {
  schema: LEGACY_SCHEMA,
  table: 'Arbeitsplatz',
  columns: {
    id: 'AP_ID',
    name: 'Bezeichnung',
    description: 'Info',
    type: { column: 'WpType', values: { vlm: 'V', carousel: 'K', ptl: 'P', manual: 'M' } },
    warehouse: 'Lager',
    controllerId: 'Steuerung',
    address: 'Adresse',
    enabled: { column: 'Aktiv', values: { true: ['J', 'Y'], false: 'N' } },
    createdAt: 'ErstelltAm',
    modifiedAt: 'GeaendertAm'
  }
}

export interface FixtureOptions {
  /**
   * Adds `Kostenstelle VARCHAR(10) NOT NULL` without a default to `Artikel`: a column the
   * mapping leaves out, so inserts through the gateway cannot work (fine only for readOnly).
   */
  unmappedRequired?: boolean
}

const REQUIRED_SQLITE = '  "Kostenstelle" VARCHAR(10) NOT NULL,\n'
const REQUIRED_MSSQL = '  [Kostenstelle] VARCHAR(10) NOT NULL,\n'

/** SQLite: one statement per string. Declared types as the picking system declares them. */
export const SQLITE_DDL: readonly string[] = [
  `CREATE TABLE "Artikel" (
  "ArtID" INTEGER PRIMARY KEY,
  "ArtNr" VARCHAR(40) NOT NULL UNIQUE,
  "Bezeichnung" VARCHAR(80) NOT NULL,
  "Beschreibung" VARCHAR(255),
  "ME" VARCHAR(10) DEFAULT 'ST',
  "EAN" VARCHAR(20),
  "MinBestand" DECIMAL(18,3) CONSTRAINT "CK_Artikel_MinBestand" CHECK ("MinBestand" >= 0),
  "MaxBestand" DECIMAL(18,3),
  "Gewicht" DECIMAL(10,3) CONSTRAINT "CK_Artikel_Gewicht" CHECK ("Gewicht" IS NULL OR "Gewicht" <= 5000),
  "Gesperrt" CHAR(1) NOT NULL DEFAULT 'N' CONSTRAINT "CK_Artikel_Gesperrt" CHECK ("Gesperrt" IN ('J', 'N')),
  "Sperrgrund" VARCHAR(100),
  "Bestand" DECIMAL(18,3) NOT NULL DEFAULT 0,
  "Angelegt" DATETIME NOT NULL DEFAULT (datetime('now', 'localtime')),
  "LastChange" DATETIME,
  "Lagerzone" VARCHAR(4) NOT NULL DEFAULT 'A',
  "Mandant" INTEGER NOT NULL DEFAULT 1,
  CONSTRAINT "CK_Artikel_MaxBestand" CHECK ("MaxBestand" IS NULL OR "MinBestand" IS NULL OR "MaxBestand" >= "MinBestand")
)`,
  'CREATE INDEX "IX_Artikel_LastChange" ON "Artikel" ("LastChange")',
  `CREATE TABLE "Artikel_Protokoll" (
  "ProtID" INTEGER PRIMARY KEY,
  "ArtID" INTEGER NOT NULL,
  "ArtNr" VARCHAR(40),
  "Aktion" CHAR(1) NOT NULL,
  "Zeit" DATETIME NOT NULL DEFAULT (datetime('now', 'localtime'))
)`,
  `CREATE TRIGGER "trg_Artikel_Protokoll_I" AFTER INSERT ON "Artikel" BEGIN
  INSERT INTO "Artikel_Protokoll" ("ArtID", "ArtNr", "Aktion") VALUES (NEW."ArtID", NEW."ArtNr", 'I');
END`,
  `CREATE TRIGGER "trg_Artikel_Protokoll_U" AFTER UPDATE ON "Artikel" BEGIN
  INSERT INTO "Artikel_Protokoll" ("ArtID", "ArtNr", "Aktion") VALUES (NEW."ArtID", NEW."ArtNr", 'U');
END`,
  `CREATE TRIGGER "trg_Artikel_Protokoll_D" AFTER DELETE ON "Artikel" BEGIN
  INSERT INTO "Artikel_Protokoll" ("ArtID", "ArtNr", "Aktion") VALUES (OLD."ArtID", OLD."ArtNr", 'D');
END`,
  `CREATE TRIGGER "trg_Artikel_Gesperrt" BEFORE UPDATE ON "Artikel"
  WHEN OLD."Gesperrt" = 'J' AND NEW."Gesperrt" = 'J' AND (NEW."ArtNr" <> OLD."ArtNr" OR NEW."ME" IS NOT OLD."ME")
BEGIN
  SELECT RAISE(ABORT, '${BLOCKED_MESSAGE}');
END`,
  `CREATE TABLE "Lagerplatz" (
  "LpID" INTEGER PRIMARY KEY,
  "Platz" VARCHAR(20) NOT NULL UNIQUE,
  "ArtID" INTEGER CONSTRAINT "FK_Lagerplatz_Artikel" REFERENCES "Artikel" ("ArtID"),
  "Menge" DECIMAL(18,3) NOT NULL DEFAULT 0
)`,
  `CREATE TABLE "Arbeitsplatz" (
  "AP_ID" INTEGER PRIMARY KEY,
  "Bezeichnung" VARCHAR(30) NOT NULL UNIQUE,
  "Info" VARCHAR(100),
  "WpType" CHAR(1) NOT NULL DEFAULT 'M',
  "Lager" VARCHAR(10),
  "Steuerung" VARCHAR(20),
  "Adresse" SMALLINT,
  "Aktiv" CHAR(1) NOT NULL DEFAULT 'J',
  "ErstelltAm" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "GeaendertAm" DATETIME
)`
]

/** SQL Server (T-SQL): one batch per string (no GO); a trigger is alone in its batch. */
export const MSSQL_DDL: readonly string[] = [
  "IF SCHEMA_ID(N'wms') IS NULL EXEC(N'CREATE SCHEMA [wms] AUTHORIZATION [dbo]')",
  `CREATE TABLE [wms].[Artikel] (
  [ArtID] INT IDENTITY(1,1) NOT NULL CONSTRAINT [PK_Artikel] PRIMARY KEY,
  [ArtNr] VARCHAR(40) NOT NULL CONSTRAINT [UQ_Artikel_ArtNr] UNIQUE,
  [Bezeichnung] VARCHAR(80) NOT NULL,
  [Beschreibung] VARCHAR(255) NULL,
  [ME] VARCHAR(10) NULL CONSTRAINT [DF_Artikel_ME] DEFAULT ('ST'),
  [EAN] VARCHAR(20) NULL,
  [MinBestand] DECIMAL(18,3) NULL CONSTRAINT [CK_Artikel_MinBestand] CHECK ([MinBestand] >= 0),
  [MaxBestand] DECIMAL(18,3) NULL,
  [Gewicht] DECIMAL(10,3) NULL CONSTRAINT [CK_Artikel_Gewicht] CHECK ([Gewicht] IS NULL OR [Gewicht] <= 5000),
  [Gesperrt] CHAR(1) NOT NULL CONSTRAINT [DF_Artikel_Gesperrt] DEFAULT ('N') CONSTRAINT [CK_Artikel_Gesperrt] CHECK ([Gesperrt] IN ('J', 'N')),
  [Sperrgrund] VARCHAR(100) NULL,
  [Bestand] DECIMAL(18,3) NOT NULL CONSTRAINT [DF_Artikel_Bestand] DEFAULT (0),
  [Angelegt] DATETIME NOT NULL CONSTRAINT [DF_Artikel_Angelegt] DEFAULT (GETDATE()),
  [LastChange] DATETIME NULL,
  [Lagerzone] VARCHAR(4) NOT NULL CONSTRAINT [DF_Artikel_Lagerzone] DEFAULT ('A'),
  [Mandant] INT NOT NULL CONSTRAINT [DF_Artikel_Mandant] DEFAULT (1),
  CONSTRAINT [CK_Artikel_MaxBestand] CHECK ([MaxBestand] IS NULL OR [MinBestand] IS NULL OR [MaxBestand] >= [MinBestand])
)`,
  'CREATE INDEX [IX_Artikel_LastChange] ON [wms].[Artikel] ([LastChange])',
  `CREATE TABLE [wms].[Artikel_Protokoll] (
  [ProtID] INT IDENTITY(1,1) NOT NULL CONSTRAINT [PK_Artikel_Protokoll] PRIMARY KEY,
  [ArtID] INT NOT NULL,
  [ArtNr] VARCHAR(40) NULL,
  [Aktion] CHAR(1) NOT NULL,
  [Zeit] DATETIME NOT NULL CONSTRAINT [DF_Artikel_Protokoll_Zeit] DEFAULT (GETDATE()),
  [Benutzer] NVARCHAR(128) NOT NULL CONSTRAINT [DF_Artikel_Protokoll_Benutzer] DEFAULT (SUSER_SNAME())
)`,
  `CREATE TRIGGER [wms].[trg_Artikel_Protokoll] ON [wms].[Artikel] AFTER INSERT, UPDATE, DELETE AS
BEGIN
  SET NOCOUNT ON;
  INSERT INTO [wms].[Artikel_Protokoll] ([ArtID], [ArtNr], [Aktion])
    SELECT i.[ArtID], i.[ArtNr], CASE WHEN EXISTS (SELECT 1 FROM deleted) THEN 'U' ELSE 'I' END FROM inserted AS i;
  INSERT INTO [wms].[Artikel_Protokoll] ([ArtID], [ArtNr], [Aktion])
    SELECT d.[ArtID], d.[ArtNr], 'D' FROM deleted AS d WHERE NOT EXISTS (SELECT 1 FROM inserted);
END`,
  `CREATE TRIGGER [wms].[trg_Artikel_Gesperrt] ON [wms].[Artikel] AFTER UPDATE AS
BEGIN
  SET NOCOUNT ON;
  IF EXISTS (SELECT 1 FROM inserted AS i JOIN deleted AS d ON d.[ArtID] = i.[ArtID]
             WHERE d.[Gesperrt] = 'J' AND i.[Gesperrt] = 'J'
               AND (i.[ArtNr] <> d.[ArtNr] OR ISNULL(i.[ME], '') <> ISNULL(d.[ME], '')))
  BEGIN
    RAISERROR (N'${BLOCKED_MESSAGE}', 16, 1);
    ROLLBACK TRANSACTION;
    RETURN;
  END
END`,
  `CREATE TABLE [wms].[Lagerplatz] (
  [LpID] INT IDENTITY(1,1) NOT NULL CONSTRAINT [PK_Lagerplatz] PRIMARY KEY,
  [Platz] VARCHAR(20) NOT NULL CONSTRAINT [UQ_Lagerplatz_Platz] UNIQUE,
  [ArtID] INT NULL,
  [Menge] DECIMAL(18,3) NOT NULL CONSTRAINT [DF_Lagerplatz_Menge] DEFAULT (0),
  CONSTRAINT [FK_Lagerplatz_Artikel] FOREIGN KEY ([ArtID]) REFERENCES [wms].[Artikel] ([ArtID])
)`,
  `CREATE TABLE [wms].[Arbeitsplatz] (
  [AP_ID] INT IDENTITY(1,1) NOT NULL CONSTRAINT [PK_Arbeitsplatz] PRIMARY KEY,
  [Bezeichnung] VARCHAR(30) NOT NULL CONSTRAINT [UQ_Arbeitsplatz_Bezeichnung] UNIQUE,
  [Info] VARCHAR(100) NULL,
  [WpType] CHAR(1) NOT NULL CONSTRAINT [DF_Arbeitsplatz_WpType] DEFAULT ('M'),
  [Lager] VARCHAR(10) NULL,
  [Steuerung] VARCHAR(20) NULL,
  [Adresse] SMALLINT NULL,
  [Aktiv] CHAR(1) NOT NULL CONSTRAINT [DF_Arbeitsplatz_Aktiv] DEFAULT ('J'),
  [ErstelltAm] DATETIME NOT NULL CONSTRAINT [DF_Arbeitsplatz_ErstelltAm] DEFAULT (GETUTCDATE()),
  [GeaendertAm] DATETIME NULL
)`
]

/** Drops the fixture's tables in foreign key order (their triggers go with them); SQL Server 2016+. */
export const MSSQL_DROP: readonly string[] = [
  'DROP TABLE IF EXISTS [wms].[Lagerplatz]',
  'DROP TABLE IF EXISTS [wms].[Artikel_Protokoll]',
  'DROP TABLE IF EXISTS [wms].[Artikel]',
  'DROP TABLE IF EXISTS [wms].[Arbeitsplatz]'
]

export function fixtureDdl (dialect: DialectName, opts: FixtureOptions = {}): string[] {
  const ddl = [...(dialect === 'mssql' ? MSSQL_DDL : SQLITE_DDL)]
  if (opts.unmappedRequired !== true) return ddl
  const marker = dialect === 'mssql' ? '  [Mandant]' : '  "Mandant"'
  return ddl.map((stmt) => /TABLE (\[wms\]\.)?\[?"?Artikel"?\]? \(/.test(stmt)
    ? stmt.replace(marker, `${dialect === 'mssql' ? REQUIRED_MSSQL : REQUIRED_SQLITE}${marker}`)
    : stmt)
}

// ---------------------------------------------------------------------------------------------
// Rows

export interface ArtikelRow {
  ArtNr: string
  Bezeichnung: string
  Beschreibung: string | null
  ME: string | null
  EAN: string | null
  MinBestand: number | null
  MaxBestand: number | null
  Gewicht: number | null
  Gesperrt: 'J' | 'N'
  Sperrgrund: string | null
  Bestand: number
  /** Berlin wall-clock time, in the text form the picking system wrote it (SQLite keeps it as is) */
  Angelegt: string
  LastChange: string | null
}

/** What the API must show for a row: UTC times, written out by hand for the rows around the DST changes. */
export interface ArtikelExpectation {
  createdAt: string
  modifiedAt: string | null
}

export interface ArbeitsplatzRow {
  Bezeichnung: string
  Info: string | null
  WpType: string
  Lager: string | null
  Steuerung: string | null
  Adresse: number | null
  Aktiv: string
  /** UTC, SQLite's CURRENT_TIMESTAMP form; null: left to the column default */
  ErstelltAm: string | null
  GeaendertAm: string | null
}

/** The tie: one batch import stamped 120 rows with the same second. */
export const TIE_WALL = '2026-11-23 07:06:04'
export const TIE_UTC = '2026-11-23T06:06:04.000Z'
export const TIE_ROWS = 120
export const NULL_ROWS = 40
export const SPREAD_ROWS = 140

/** Rows written by hand with the values the API must show (DST: 29 March 02:00 -> 03:00, 25 October 03:00 -> 02:00). */
export const SPECIAL_ROWS: Array<ArtikelRow & { expect: ArtikelExpectation }> = [
  {
    ArtNr: 'A-1000', Bezeichnung: 'Sechskantschraube M8x40 DIN 933 verzinkt', Beschreibung: 'Festigkeitsklasse 8.8', ME: 'Stk', EAN: '4006209123456',
    MinBestand: 100, MaxBestand: 2500, Gewicht: 0.021, Gesperrt: 'N', Sperrgrund: null, Bestand: 1234.5,
    Angelegt: '2019-03-04 10:15:00', LastChange: '2026-01-15 08:30:00', // winter: CET, UTC+1
    expect: { createdAt: '2019-03-04T09:15:00.000Z', modifiedAt: '2026-01-15T07:30:00.000Z' }
  },
  {
    ArtNr: 'A-1001', Bezeichnung: 'Kugelhahn DN15 PN40 Messing', Beschreibung: null, ME: null, EAN: null,
    MinBestand: 5, MaxBestand: null, Gewicht: 0.31, Gesperrt: 'J', Sperrgrund: 'Reklamation Lieferant', Bestand: 0,
    Angelegt: '2020-07-01 00:00:00', LastChange: '2026-07-01T12:00:00', // summer: CEST, UTC+2 (the created day moves back)
    expect: { createdAt: '2020-06-30T22:00:00.000Z', modifiedAt: '2026-07-01T10:00:00.000Z' }
  },
  {
    ArtNr: 'A-1002', Bezeichnung: 'Dichtring 17x23 Kupfer', Beschreibung: 'DIN 7603 Form A', ME: 'Stk', EAN: '4006209000017',
    MinBestand: 500, MaxBestand: 5000, Gewicht: 0.002, Gesperrt: 'N', Sperrgrund: null, Bestand: 3200,
    Angelegt: '2021-02-01 07:00:00', LastChange: '2026-03-29 02:30:00', // in the gap: no Berlin clock showed it; read as the moment the clock jumped
    expect: { createdAt: '2021-02-01T06:00:00.000Z', modifiedAt: '2026-03-29T01:00:00.000Z' }
  },
  {
    ArtNr: 'A-1003', Bezeichnung: 'Kabelbinder 200x4,8 schwarz', Beschreibung: null, ME: 'Btl', EAN: null,
    MinBestand: 10, MaxBestand: 100, Gewicht: 0.1, Gesperrt: 'N', Sperrgrund: null, Bestand: 17,
    Angelegt: '2021-02-01 07:00:00', LastChange: '2026-10-25 02:30:00.000', // in the overlap: the earlier instant (CEST)
    expect: { createdAt: '2021-02-01T06:00:00.000Z', modifiedAt: '2026-10-25T00:30:00.000Z' }
  },
  {
    ArtNr: 'A-1004', Bezeichnung: 'Altbestand Muttern sortiert', Beschreibung: null, ME: null, EAN: null,
    MinBestand: null, MaxBestand: null, Gewicht: null, Gesperrt: 'N', Sperrgrund: null, Bestand: 0,
    Angelegt: '2003-11-17 08:00:00', LastChange: null, // from before the picking system kept change times
    expect: { createdAt: '2003-11-17T07:00:00.000Z', modifiedAt: null }
  },
  ...([
    ['E-01', '2026-03-29 01:59:59', '2026-03-29T00:59:59.000Z'], // last second of CET
    ['E-02', '2026-03-29 03:00:00', '2026-03-29T01:00:00.000Z'], // first second of CEST
    ['E-03', '2026-03-29 03:10:00', '2026-03-29T01:10:00.000Z'],
    ['E-04', '2026-10-25 01:59:59', '2026-10-24T23:59:59.000Z'],
    ['E-05', '2026-10-25 02:00:00', '2026-10-25T00:00:00.000Z'], // the overlap starts: earlier instant
    ['E-06', '2026-10-25 03:00:00', '2026-10-25T02:00:00.000Z'], // CET again
    ['E-07', '2026-10-25 03:30:00', '2026-10-25T02:30:00.000Z']
  ] as const).map(([ArtNr, LastChange, modifiedAt], i): ArtikelRow & { expect: ArtikelExpectation } => ({
    ArtNr, Bezeichnung: `Zeitumstellung ${i + 1}`, Beschreibung: null, ME: 'Stk', EAN: null,
    MinBestand: 0, MaxBestand: null, Gewicht: null, Gesperrt: 'N', Sperrgrund: null, Bestand: 0,
    Angelegt: '2025-12-01 09:00:00', LastChange,
    expect: { createdAt: '2025-12-01T08:00:00.000Z', modifiedAt }
  }))
]

const pad = (n: number, width = 2): string => String(n).padStart(width, '0')
/** a Date's UTC fields as wall text 'YYYY-MM-DD HH:MM:SS' (the Date is used as a plain calendar) */
const wallText = (d: Date): string => `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`

/**
 * Berlin wall time -> UTC for times between 06:00 and 22:00 (never near a transition): UTC+2
 * from 29 March to 24 October 2026, UTC+1 otherwise. Written independently of the gateway.
 */
export function berlinToUtc (wall: string): string {
  const text = wall.slice(0, 19).replace(' ', 'T')
  const hour = Number(text.slice(11, 13))
  if (hour < 6 || hour > 22) throw new Error(`berlinToUtc only knows daytime, got ${wall}`)
  const day = text.slice(0, 10)
  const summer = day >= '2026-03-29' && day <= '2026-10-24'
  return new Date(Date.parse(`${text}Z`) - (summer ? 2 : 1) * 3_600_000).toISOString()
}

/** The text forms other programs leave in SQLite DATETIME columns; SQL Server holds the value alone. */
function asWritten (wall: string, i: number): string {
  switch (i % 3) {
    case 0: return wall // CURRENT_TIMESTAMP / datetime('now', 'localtime')
    case 1: return wall.replace(' ', 'T') // .NET's sortable "s" format
    default: return `${wall}.000`
  }
}

const UNITS = ['Stk', 'kg', 'm', 'Karton', 'l', 'Paar']

function bulkRow (prefix: string, i: number, lastChange: string | null): ArtikelRow & { expect: ArtikelExpectation } {
  const created = wallText(new Date(Date.UTC(2024, 0, 5 + (i % 50), 8 + (i % 9), (i * 7) % 60, 0)))
  return {
    ArtNr: `${prefix}-${pad(i, 4)}`,
    Bezeichnung: `${prefix === 'B' ? 'Schraube' : prefix === 'C' ? 'Altartikel' : 'Artikel'} ${i} ${'ABCDEFG'[i % 7]}`,
    Beschreibung: i % 4 === 0 ? null : `Beschreibung ${prefix}${i}`,
    ME: i % 7 === 3 ? null : UNITS[i % UNITS.length],
    EAN: i % 5 === 0 ? null : `400${pad(i, 10)}`,
    MinBestand: i % 6 === 0 ? null : (i % 40) + 0.5,
    MaxBestand: i % 6 === 0 ? null : (i % 40) * 10 + 100,
    Gewicht: i % 8 === 0 ? null : Math.round(i * 1.337) / 1000,
    Gesperrt: i % 9 === 4 ? 'J' : 'N',
    Sperrgrund: i % 9 === 4 ? 'Inventurdifferenz' : null,
    Bestand: (i * 13) % 700,
    Angelegt: created,
    LastChange: lastChange,
    expect: { createdAt: berlinToUtc(created), modifiedAt: lastChange === null ? null : berlinToUtc(lastChange) }
  }
}

/** A fixed shuffle (so ids do not follow the times): a linear congruential generator. */
function shuffled<T> (items: T[]): T[] {
  const out = [...items]
  let seed = 20261123
  for (let i = out.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2147483648
    const j = seed % (i + 1)
    ;[out[i], out[j]] = [out[j], out[i]]
  }
  return out
}

/** Every Artikel row in insertion order, with the values the API must show. */
export const ARTIKEL_ROWS: Array<ArtikelRow & { expect: ArtikelExpectation }> = (() => {
  const bulk: Array<ArtikelRow & { expect: ArtikelExpectation }> = []
  for (let i = 1; i <= TIE_ROWS; i++) bulk.push({ ...bulkRow('B', i, null), LastChange: asWritten(TIE_WALL, i), expect: { ...bulkRow('B', i, null).expect, modifiedAt: TIE_UTC } })
  for (let i = 1; i <= NULL_ROWS; i++) bulk.push(bulkRow('C', i, null))
  for (let i = 1; i <= SPREAD_ROWS; i++) {
    const wall = wallText(new Date(Date.UTC(2025, 10, 2 + Math.floor(i * 2.6), 6 + ((i * 5) % 15), (i * 37) % 60, (i * 11) % 60)))
    const row = bulkRow('D', i, wall)
    bulk.push({ ...row, LastChange: asWritten(wall, i) })
  }
  // the hand-written rows first (low ids), the rest in a fixed shuffle
  return [...SPECIAL_ROWS, ...shuffled(bulk)]
})()

export const ARBEITSPLATZ_ROWS: ArbeitsplatzRow[] = shuffled([
  ...[1, 2, 3, 4, 5, 6].map((i): ArbeitsplatzRow => ({ Bezeichnung: `LIFT-0${i}`, Info: i === 1 ? 'Kardex Shuttle XP 500' : null, WpType: i === 6 ? 'v' : 'V', Lager: 'HL1', Steuerung: i <= 3 ? 'kardex-1' : null, Adresse: i <= 3 ? i : null, Aktiv: 'J', ErstelltAm: '2025-02-03 10:00:00', GeaendertAm: i === 1 ? '2026-11-20 14:05:09' : i % 2 === 0 ? '2026-11-21 06:30:00' : null })),
  ...[1, 2, 3, 4, 5].map((i): ArbeitsplatzRow => ({ Bezeichnung: `KARUSSELL-0${i}`, Info: null, WpType: 'K', Lager: 'HL1', Steuerung: null, Adresse: 10 + i, Aktiv: i === 5 ? 'N' : 'J', ErstelltAm: '2025-02-03 10:00:00', GeaendertAm: i % 2 === 0 ? '2026-11-21 06:30:00' : `2026-10-0${i} 12:00:00` })),
  ...[1, 2, 3, 4, 5, 6, 7].map((i): ArbeitsplatzRow => ({ Bezeichnung: `PTL-0${i}`, Info: `Fachboden ${i}`, WpType: i === 5 ? 'p' : 'P', Lager: 'KL2', Steuerung: 'ptl-bus-1', Adresse: 100 + i, Aktiv: i === 7 ? 'Y' : 'J', ErstelltAm: null, GeaendertAm: i <= 3 ? null : `2026-11-22 0${i}:15:00` })),
  ...[1, 2, 3, 4, 5].map((i): ArbeitsplatzRow => ({ Bezeichnung: `HAND-0${i}`, Info: null, WpType: 'M', Lager: i === 5 ? null : 'KL2', Steuerung: null, Adresse: null, Aktiv: i === 4 ? 'N' : 'J', ErstelltAm: '2024-06-30 23:30:00', GeaendertAm: null })),
  { Bezeichnung: 'SHUTTLE-01', Info: 'Shuttle, von der Gateway-Konfiguration noch nicht erfasst', WpType: 'S', Lager: 'HL1', Steuerung: null, Adresse: null, Aktiv: 'J', ErstelltAm: '2026-01-12 08:00:00', GeaendertAm: '2026-11-21 06:30:00' }
])

/** Bins: which materials are still referenced by the picking system (their deletion must fail). */
export const LAGERPLATZ_ROWS: Array<{ Platz: string, ArtNr: string | null, Menge: number }> = [
  { Platz: 'HL1-01-01-A', ArtNr: 'A-1000', Menge: 800 },
  { Platz: 'HL1-01-01-B', ArtNr: 'A-1000', Menge: 434.5 },
  { Platz: 'KL2-04-03-C', ArtNr: 'B-0003', Menge: 12 },
  { Platz: 'KL2-04-03-D', ArtNr: null, Menge: 0 }
]

// ---------------------------------------------------------------------------------------------
// Creating and filling the fixture through the gateway's Database interface

/** A table name as each dialect writes it. */
export function tableName (dialect: DialectName, table: string): string {
  return dialect === 'mssql' ? `[${LEGACY_SCHEMA}].[${table}]` : `"${table}"`
}

/** SQL Server reads 'YYYY-MM-DDTHH:MM:SS' the same in every language setting; a space form would depend on DATEFORMAT. */
function timeParam (dialect: DialectName, text: string | null): string | null {
  if (text === null || dialect === 'sqlite') return text
  return text.replace(' ', 'T')
}

function param (name: string, value: string | number | null, kind: Param['kind']): Param {
  return { name, kind, value }
}

async function insertRows (db: Database, table: string, columns: string[], rows: Param[][]): Promise<void> {
  // SQL Server takes at most 2100 parameters and 1000 rows per VALUES list
  const chunk = Math.max(1, Math.floor(1000 / columns.length))
  for (let start = 0; start < rows.length; start += chunk) {
    const part = rows.slice(start, start + chunk)
    const values = part.map((row) => `(${row.map((p) => `@${p.name}`).join(', ')})`).join(', ')
    await db.execute({
      text: `INSERT INTO ${tableName(db.dialect, table)} (${columns.map((c) => `"${c}"`).join(', ')}) VALUES ${values}`,
      params: part.flat()
    })
  }
}

/** Creates the tables (SQL Server: after dropping them) and inserts every row, as the picking system would have. */
export async function createLegacyFixture (db: Database, opts: FixtureOptions = {}): Promise<void> {
  const d = db.dialect
  if (d === 'mssql') for (const text of MSSQL_DROP) await db.execute({ text, params: [] })
  for (const text of fixtureDdl(d, opts)) await db.execute({ text, params: [] })

  const artikelColumns = ['ArtNr', 'Bezeichnung', 'Beschreibung', 'ME', 'EAN', 'MinBestand', 'MaxBestand', 'Gewicht', 'Gesperrt', 'Sperrgrund', 'Bestand', 'Angelegt', 'LastChange',
    ...(opts.unmappedRequired === true ? ['Kostenstelle'] : [])]
  await insertRows(db, 'Artikel', artikelColumns, ARTIKEL_ROWS.map((r, i) => [
    param(`a${i}_0`, r.ArtNr, 'string'),
    param(`a${i}_1`, r.Bezeichnung, 'string'),
    param(`a${i}_2`, r.Beschreibung, 'string'),
    param(`a${i}_3`, r.ME, 'string'),
    param(`a${i}_4`, r.EAN, 'string'),
    param(`a${i}_5`, r.MinBestand, 'number'),
    param(`a${i}_6`, r.MaxBestand, 'number'),
    param(`a${i}_7`, r.Gewicht, 'number'),
    param(`a${i}_8`, r.Gesperrt, 'string'),
    param(`a${i}_9`, r.Sperrgrund, 'string'),
    param(`a${i}_10`, r.Bestand, 'number'),
    param(`a${i}_11`, timeParam(d, r.Angelegt), 'string'),
    param(`a${i}_12`, timeParam(d, r.LastChange), 'string'),
    ...(opts.unmappedRequired === true ? [param(`a${i}_13`, `KST-${i % 4}`, 'string')] : [])
  ]))

  for (const [i, bin] of LAGERPLATZ_ROWS.entries()) {
    await db.execute({
      text: `INSERT INTO ${tableName(d, 'Lagerplatz')} ("Platz", "ArtID", "Menge") SELECT @platz, (SELECT "ArtID" FROM ${tableName(d, 'Artikel')} WHERE "ArtNr" = @nr), @menge`,
      params: [param('platz', bin.Platz, 'string'), param('nr', bin.ArtNr ?? `none-${i}`, 'string'), param('menge', bin.Menge, 'number')]
    })
  }

  // rows without ErstelltAm get the column default (CURRENT_TIMESTAMP / GETUTCDATE())
  for (const withCreated of [true, false]) {
    const rows = ARBEITSPLATZ_ROWS.filter((r) => (r.ErstelltAm !== null) === withCreated)
    const columns = ['Bezeichnung', 'Info', 'WpType', 'Lager', 'Steuerung', 'Adresse', 'Aktiv', 'GeaendertAm', ...(withCreated ? ['ErstelltAm'] : [])]
    await insertRows(db, 'Arbeitsplatz', columns, rows.map((r, i) => [
      param(`s${i}_0`, r.Bezeichnung, 'string'),
      param(`s${i}_1`, r.Info, 'string'),
      param(`s${i}_2`, r.WpType, 'string'),
      param(`s${i}_3`, r.Lager, 'string'),
      param(`s${i}_4`, r.Steuerung, 'string'),
      param(`s${i}_5`, r.Adresse, 'integer'),
      param(`s${i}_6`, r.Aktiv, 'string'),
      param(`s${i}_7`, timeParam(d, r.GeaendertAm), 'string'),
      ...(withCreated ? [param(`s${i}_8`, timeParam(d, r.ErstelltAm), 'string')] : [])
    ]))
  }
}

/** A prepare step for build(): the statements of the test database's dialect, in order. */
export function tablesFor (ddl: { mssql: string[], sqlite: string[] }): (db: Database) => Promise<void> {
  return async (db) => {
    for (const text of db.dialect === 'mssql' ? ddl.mssql : ddl.sqlite) await db.execute({ text, params: [] })
  }
}

/** A materials mapping onto a picking system's narrow table: the columns given, every other field mapped to null. */
export function narrowMaterials (table: string, columns: Record<string, string>): TableMappingConfig {
  const absent = ['description', 'unit', 'barcode', 'minStock', 'maxStock', 'weight', 'blocked', 'blockReason', 'stockQuantity', 'createdAt', 'modifiedAt']
  return { table, columns: { ...Object.fromEntries(absent.map((field) => [field, null])), ...columns } }
}

/**
 * users on `BenMandant` (SQLite), keyed by client and number: (Mandant, Nr). Each client numbers its own users, so one
 * Nr may be held by a row of each client, and a Nr is no id the gateway can name one user by.
 */
export const MANDANT_USERS: TableMappingConfig = {
  table: 'BenMandant',
  newIds: 'max+1',
  columns: { id: 'Nr', username: 'Login', passwordHash: 'PwHash', type: { column: 'Rolle', values: { admin: 'A', user: 'B', application: 'S' } }, displayName: 'Name', enabled: 'Aktiv', tokenVersion: 'TokVer', lastLoginAt: 'Login_am', createdAt: 'Angelegt', modifiedAt: 'Geaendert' }
}

/** Creates MANDANT_USERS' table (SQLite) with its admin, user 1 of client 1. */
export async function createMandantUsers (db: Database, adminHash: string): Promise<void> {
  await db.execute({ text: 'CREATE TABLE "BenMandant" ("Mandant" INTEGER NOT NULL DEFAULT 1, "Nr" INTEGER NOT NULL, "Login" VARCHAR(64) NOT NULL UNIQUE, "PwHash" VARCHAR(255) NOT NULL, "Rolle" CHAR(1) NOT NULL DEFAULT \'B\', "Aktiv" BOOLEAN NOT NULL DEFAULT 1, "TokVer" INTEGER NOT NULL DEFAULT 0, "Name" VARCHAR(200), "Login_am" DATETIME, "Angelegt" DATETIME, "Geaendert" DATETIME, PRIMARY KEY ("Mandant", "Nr"))', params: [] })
  await db.execute({ text: 'INSERT INTO "BenMandant" ("Mandant", "Nr", "Login", "PwHash", "Rolle") VALUES (1, 1, \'admin\', @admin, \'A\')', params: [{ name: 'admin', kind: 'string', value: adminHash }] })
}
