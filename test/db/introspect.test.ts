// `db introspect` against a legacy-shaped SQLite database, the SQL Server statements by their exact text, and the CLI end to end.
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { main, type Io } from '../../src/commands.js'
import { mappingsOf, normalizeMapping, validateConfig } from '../../src/config.js'
import { openDatabase } from '../../src/db/index.js'
import { createTableStatements } from '../../src/db/init.js'
import {
  distinctValuesStatement, formatReport, introspect, listTablesStatement, mappingConfig, proposeBooleanMap,
  nameTokens, normalizeName, proposeStationTypeMap, proposeUserTypeMap, tableNameScore, timeFormatOf, timeValuesStatement, type CodeCount
} from '../../src/db/introspect.js'
import { parseListQuery } from '../../src/db/list-query.js'
import { Repository } from '../../src/db/repository.js'
import { materials, referenceMappings, resources } from '../../src/db/resources.js'
import { compileValueMap, inspectStorage, type Category } from '../../src/db/storage.js'
import type { ColumnInfo, Database, Row, Statement } from '../../src/db/types.js'
import { tempDir } from '../helpers/temp.js'

const dir = tempDir(t, 'pg-introspect-')

const silent = { info () {}, warn () {}, error () {} }
const SECRET = 'a3f1c9e07b52d84611f0e9c3a7b25d6e8f4c1a09b7d3e5f2c8a6b4d1e0f9c7a5'

/** The shapes an integrator meets: German names, J/N flags, one-letter station types, a log table, a view. */
function legacyDatabase (path: string, opts: { complete?: boolean } = {}): void {
  const db = new BetterSqlite3(path)
  const complete = opts.complete === true
  db.exec(`
    CREATE TABLE Artikel (
      ArtID INTEGER PRIMARY KEY,
      ArtNr VARCHAR(40) NOT NULL,
      Bezeichnung VARCHAR(80) NOT NULL,
      ${complete ? 'Beschreibung VARCHAR(2000), MaxBestand DECIMAL(18,3), Sperrgrund VARCHAR(200),' : ''}
      ME VARCHAR(10),
      EAN VARCHAR(20),
      MinBestand DECIMAL(18,3),
      Gewicht REAL,
      Gesperrt CHAR(1) NOT NULL DEFAULT 'N',
      Bestand DECIMAL(18,3) NOT NULL DEFAULT 0,
      Angelegt DATETIME,
      LastChange DATETIME
      ${complete ? '' : ', Lagerzone VARCHAR(4) NOT NULL'}
    );
    CREATE TABLE ArtikelLog (LogID INTEGER PRIMARY KEY, ArtNr VARCHAR(40), Bezeichnung VARCHAR(80), Angelegt DATETIME);
    CREATE TABLE Arbeitsplatz (
      WpID INTEGER PRIMARY KEY,
      WpName VARCHAR(20) NOT NULL,
      ${complete ? 'Beschreibung VARCHAR(200),' : ''}
      WpType CHAR(1) NOT NULL,
      Lager VARCHAR(10),
      SPS VARCHAR(20),
      Adresse INTEGER,
      Aktiv BIT NOT NULL DEFAULT 1,
      Angelegt DATETIME,
      Geaendert DATETIME
    );
    CREATE TABLE Users (UserID INTEGER PRIMARY KEY, Login VARCHAR(20) NOT NULL, Name VARCHAR(80));
    CREATE VIEW v_Gesperrt AS SELECT ArtID, ArtNr FROM Artikel WHERE Gesperrt = 'J';
  `)
  const lagerzone = complete ? '' : ', Lagerzone'
  const insert = db.prepare(`INSERT INTO Artikel (ArtNr, Bezeichnung, Gesperrt, Angelegt${lagerzone}) VALUES (?, ?, ?, '2024-01-01 08:00:00'${complete ? '' : ", 'A1'"})`)
  insert.run('4711', 'Schraube M6', 'N')
  insert.run('4712', 'Mutter M6', 'N')
  insert.run('4713', 'Scheibe', 'J')
  const wp = db.prepare('INSERT INTO Arbeitsplatz (WpName, WpType, Lager) VALUES (?, ?, ?)')
  for (const [name, type] of [['L1', 'V'], ['L2', 'V'], ['K1', 'K'], ['P1', 'P'], ['M1', 'M'], ['S1', 'S']]) wp.run(name, type, 'HL')
  if (complete) {
    for (const text of createTableStatements('sqlite', resources.users, referenceMappings.users)) db.exec(text)
  }
  db.close()
}


/** The proposal without the fields it maps to null (the tests of table choice look at the matched columns). */
function mapped<T extends { columns: Record<string, unknown> } | undefined> (mapping: T): T {
  if (mapping === undefined) return mapping
  return { ...mapping, columns: Object.fromEntries(Object.entries(mapping.columns).filter(([, c]) => c !== null)) }
}

t.test('the SQL Server statements, by their exact text', async (t) => {
  t.same(listTablesStatement('mssql'), {
    text: 'SELECT [t].[TABLE_SCHEMA] AS [schema], [t].[TABLE_NAME] AS [name], [t].[TABLE_TYPE] AS [type], ' +
      '(SELECT SUM([p].[rows]) FROM sys.partitions AS [p] WHERE [p].[object_id] = OBJECT_ID(QUOTENAME([t].[TABLE_SCHEMA]) + N\'.\' + QUOTENAME([t].[TABLE_NAME])) AND [p].[index_id] IN (0, 1)) AS [rows] ' +
      'FROM INFORMATION_SCHEMA.TABLES AS [t] ORDER BY [t].[TABLE_SCHEMA], [t].[TABLE_NAME]',
    params: []
  })
  t.same(distinctValuesStatement('mssql', { schema: 'wms', name: 'Arbeits]platz', view: false }, 'WpType'), {
    text: 'SELECT TOP (21) [WpType] AS [v], COUNT(*) AS [n] FROM [wms].[Arbeits]]platz] GROUP BY [WpType] ORDER BY COUNT(*) DESC',
    params: []
  })
  // a time kept as digits in a legacy text column: grouped through varchar(max) (GROUP BY text is error 306 and stopped introspect)
  t.equal(distinctValuesStatement('mssql', { schema: 'wms', name: 'Artikel', view: false }, 'Geaendert', 'text').text,
    'SELECT TOP (21) CAST([Geaendert] AS varchar(max)) AS [v], COUNT(*) AS [n] FROM [wms].[Artikel] GROUP BY CAST([Geaendert] AS varchar(max)) ORDER BY COUNT(*) DESC')
  t.equal(distinctValuesStatement('mssql', { schema: 'wms', name: 'Artikel', view: false }, 'Geaendert', 'ntext').text,
    'SELECT TOP (21) CAST([Geaendert] AS nvarchar(max)) AS [v], COUNT(*) AS [n] FROM [wms].[Artikel] GROUP BY CAST([Geaendert] AS nvarchar(max)) ORDER BY COUNT(*) DESC')
  t.equal(distinctValuesStatement('sqlite', { name: 'Arbeitsplatz', view: false }, 'WpType', 'text').text,
    'SELECT "WpType" AS "v", COUNT(*) AS "n" FROM "Arbeitsplatz" GROUP BY "WpType" ORDER BY COUNT(*) DESC LIMIT 21', 'SQLite groups any column')
  t.same(distinctValuesStatement('sqlite', { name: 'Arbeitsplatz', view: false }, 'WpType').text,
    'SELECT "WpType" AS "v", COUNT(*) AS "n" FROM "Arbeitsplatz" GROUP BY "WpType" ORDER BY COUNT(*) DESC LIMIT 21')
  // a time column's format is guessed from its 1000 most frequent values, text and ntext through (n)varchar(max) as above
  t.same(timeValuesStatement('mssql', { schema: 'wms', name: 'Artikel', view: false }, 'Geaendert', 'int'), {
    text: 'SELECT TOP (1000) [Geaendert] AS [v], COUNT(*) AS [n] FROM [wms].[Artikel] GROUP BY [Geaendert] ORDER BY COUNT(*) DESC',
    params: []
  })
  t.equal(timeValuesStatement('mssql', { schema: 'wms', name: 'Artikel', view: false }, 'Geaendert', 'TEXT').text,
    'SELECT TOP (1000) CAST([Geaendert] AS varchar(max)) AS [v], COUNT(*) AS [n] FROM [wms].[Artikel] GROUP BY CAST([Geaendert] AS varchar(max)) ORDER BY COUNT(*) DESC')
  t.equal(timeValuesStatement('mssql', { schema: 'wms', name: 'Artikel', view: false }, 'Geaendert', 'ntext').text,
    'SELECT TOP (1000) CAST([Geaendert] AS nvarchar(max)) AS [v], COUNT(*) AS [n] FROM [wms].[Artikel] GROUP BY CAST([Geaendert] AS nvarchar(max)) ORDER BY COUNT(*) DESC')
  t.equal(timeValuesStatement('sqlite', { name: 'Artikel', view: false }, 'Geaendert', 'DATETIME').text,
    'SELECT "Geaendert" AS "v", COUNT(*) AS "n" FROM "Artikel" GROUP BY "Geaendert" ORDER BY COUNT(*) DESC LIMIT 1000')
})

t.test('a legacy SQLite database', async (t) => {
  const path = join(dir, 'legacy.db')
  legacyDatabase(path)
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const result = await introspect(db, mappingsOf(validateConfig({ auth: { jwtSecret: SECRET } })))

  t.same(result.tables, [
    { name: 'Arbeitsplatz', view: false, rows: 6 },
    { name: 'Artikel', view: false, rows: 3 },
    { name: 'ArtikelLog', view: false, rows: 0 },
    { name: 'Users', view: false, rows: 0 },
    { name: 'v_Gesperrt', view: true }
  ])

  const m = result.resources.materials
  t.equal(m.table?.name, 'Artikel', 'not the log table, not the view')
  t.match(m.why, /name 'Artikel' ~ materials; 11 of 14 fields matched; also considered: ArtikelLog/)
  t.same(m.mapping, {
    table: 'Artikel',
    columns: {
      id: 'ArtID',
      materialNumber: 'ArtNr',
      name: 'Bezeichnung',
      unit: 'ME',
      barcode: 'EAN',
      minStock: 'MinBestand',
      weight: 'Gewicht',
      blocked: { column: 'Gesperrt', values: { true: 'J', false: 'N' } },
      stockQuantity: 'Bestand',
      // every value whole seconds, as the picking system writes them: the gateway is to write that form too
      createdAt: { column: 'Angelegt', format: 'yyyy-mm-dd hh:mm:ss' },
      modifiedAt: 'LastChange',
      description: null,
      maxStock: null,
      blockReason: null
    }
  })
  t.same(m.unmatched, ['description', 'maxStock', 'blockReason'])
  t.same(m.unmappedRequired.map((c) => c.name), ['Lagerzone'])
  t.match(m.notes.join('\n'), /column 'Lagerzone' \(varchar\(4\)\) is NOT NULL without a default and not mapped/)
  t.match(m.notes.join('\n'), /no column for description, maxStock, blockReason: mapped to null \(always null in the API, not writable\)/)

  const s = result.resources.stations
  t.same(s.mapping, {
    table: 'Arbeitsplatz',
    columns: {
      id: 'WpID',
      name: 'WpName',
      type: { column: 'WpType', values: { vlm: 'V', carousel: 'K', ptl: 'P', manual: 'M' } },
      warehouse: 'Lager',
      controllerId: 'SPS',
      address: 'Adresse',
      enabled: 'Aktiv',
      createdAt: 'Angelegt',
      modifiedAt: 'Geaendert',
      description: null
    }
  })
  t.same(s.unmatched, ['description'])
  t.same(s.unmappedRequired, [])
  t.same(s.fields.find((f) => f.field === 'type')?.notes, ['codes not placed (returned as stored until mapped): "S"'])

  const u = result.resources.users
  t.equal(u.mapping, undefined, "a customer's user table without password hashes is not the gateway's")
  t.match(u.why, /Users \(no column for passwordHash, tokenVersion.*db init' creates 'gateway_users'/)

  const report = formatReport(result).join('\n')
  t.match(report, /^Database \(sqlite\): 4 tables, 1 view\n {2}Arbeitsplatz {2}table {2}6 rows\n/)
  t.match(report, /materials -> Artikel \(table\): /)
  t.match(report, /\n {2}blocked {9}Gesperrt \(char\(1\), not null; by name\) {2}values \{"true":"J","false":"N"\}\n/)
  t.match(report, /\n {2}description {5}- {2}\(no column\)\n/)
  t.match(report, /\n {2}id {14}ArtID \(integer, not null, identity; by name\)\n/)
  t.match(report, /users: no table \(/)
  t.same(mappingConfig(result).mapping.users, undefined)
  t.same(Object.keys(mappingConfig(result).mapping), ['materials', 'stations'])
})

t.test('SQLite times kept as TEXT (it has no time type) get the note that they are read as UTC, as a DATETIME column\'s do', async (t) => {
  const path = join(dir, 'text-times.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`CREATE TABLE artikel (artikelnummer TEXT NOT NULL PRIMARY KEY, bezeichnung TEXT NOT NULL, angelegt_am TEXT, geaendert_am TEXT) WITHOUT ROWID;
    INSERT INTO artikel VALUES ('010001', 'Schüttgut', '2026-02-27T00:10:00', '2026-03-29T00:10:00');
    CREATE TABLE arbeitsplatz (platz_id INTEGER PRIMARY KEY AUTOINCREMENT, bezeichnung TEXT NOT NULL UNIQUE, angelegt DATETIME, geaendert INTEGER);
    INSERT INTO arbeitsplatz (bezeichnung, angelegt, geaendert) VALUES ('Kommissionierplatz 1', '2024-03-31 01:30:00', 1711848600);`)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const result = await introspect(db, mappingsOf(validateConfig({ auth: { jwtSecret: SECRET } })))
  const m = result.resources.materials
  t.same([m.mapping?.columns.createdAt, m.mapping?.columns.modifiedAt], ['angelegt_am', 'geaendert_am'])
  // before: no note, so the local times of such a table read an hour or two off without a word
  t.match(m.notes.join('\n'), /date\/time columns are read as UTC; if they hold local time, add "timeZone"/, 'TEXT columns of time text')
  const s = result.resources.stations
  t.same(s.mapping?.columns.modifiedAt, { column: 'geaendert', format: 'unix' })
  t.match(s.notes.join('\n'), /read as UTC; if they hold local time, add "timeZone"/, 'a DATETIME column, as before')
})

t.test('German abbreviations of SAP and its neighbours: ERDAT, AEDAT, AENDAT; a station table named kommplatz, its address sps_adr', async (t) => {
  const path = join(dir, 'sap-names.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`CREATE TABLE teile (teilenummer TEXT NOT NULL PRIMARY KEY, benennung TEXT NOT NULL, ERDAT TEXT, AEDAT INTEGER) WITHOUT ROWID;
    INSERT INTO teile VALUES ('T00001', 'Maß-Band', '2025-01-10 08:00:00', 1760000000);
    CREATE TABLE kommplatz (nr INTEGER PRIMARY KEY AUTOINCREMENT, bez TEXT NOT NULL, art TEXT NOT NULL, sps TEXT, sps_adr INTEGER, erfdat TEXT, aendat INTEGER);
    INSERT INTO kommplatz (bez, art, sps, sps_adr, erfdat, aendat) VALUES ('Platz 1', 'L', 'ctl-1', 2, '2025-01-01 08:00:00', 1760000000);`)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const result = await introspect(db, mappingsOf(validateConfig({ auth: { jwtSecret: SECRET } })))
  const m = result.resources.materials.mapping?.columns
  // ERDAT holds CURRENT_TIMESTAMP's form in whole seconds: proposed with that format
  t.same([m?.createdAt, m?.modifiedAt], [{ column: 'ERDAT', format: 'yyyy-mm-dd hh:mm:ss' }, { column: 'AEDAT', format: 'unix' }], "SAP's Erstellungs- and Änderungsdatum")
  const s = result.resources.stations
  t.equal(s.table?.name, 'kommplatz', 'Kommissionierplatz abbreviated')
  t.same([s.mapping?.columns.createdAt, s.mapping?.columns.modifiedAt], [{ column: 'erfdat', format: 'yyyy-mm-dd hh:mm:ss' }, { column: 'aendat', format: 'unix' }])
  t.same([s.mapping?.columns.controllerId, s.mapping?.columns.address], ['sps', 'sps_adr'], "the controller's address abbreviated: SPS-Adr.")
})

t.test('the configured table wins; a view is proposed read-only; columns the configuration cannot name are skipped', async (t) => {
  const path = join(dir, 'view.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE art_base (id INTEGER PRIMARY KEY, artnr TEXT NOT NULL, bezeichnung TEXT NOT NULL, "Gewicht in g" REAL, "Geänderte" DATETIME, "Notiz	alt" TEXT);
    CREATE VIEW Material AS SELECT id, artnr, bezeichnung FROM art_base;
    CREATE TABLE Materials (MatID INTEGER PRIMARY KEY, MatNo TEXT NOT NULL, MatName TEXT NOT NULL);
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())

  const byName = await introspect(db, { materials: { table: 'nothing_here', columns: {} } })
  t.same(mapped(byName.resources.materials.mapping), { table: 'Materials', columns: { id: 'MatID', materialNumber: 'MatNo', name: 'MatName' } })

  const configured = await introspect(db, { materials: { table: 'art_base', columns: { weight: 'Gewicht in g' } } })
  const m = configured.resources.materials
  t.equal(m.table?.name, 'art_base')
  t.match(m.why, /^the configured mapping names it; 5 of 14 fields/)
  t.same(mapped(m.mapping)?.columns, { id: 'id', materialNumber: 'artnr', name: 'bezeichnung', weight: 'Gewicht in g', modifiedAt: 'Geänderte' }, 'umlauts are names the configuration takes')
  t.match(m.notes.join('\n'), /columns the configuration cannot name, not considered: Notiz\talt/, 'a control character is not')

  // only the view and a table whose columns do not fit: the view it is, read-only
  const raw2 = new BetterSqlite3(path)
  raw2.exec('DROP TABLE Materials')
  raw2.close()
  const view = (await introspect(db, {})).resources.materials
  t.same(mapped(view.mapping), { table: 'Material', columns: { id: 'id', materialNumber: 'artnr', name: 'bezeichnung' }, readOnly: true })
  t.same(view.unmappedRequired, [], 'a view takes no inserts')
  t.match(view.notes.join('\n'), /a view: proposed "readOnly": true/)
})

t.test('table names', async (t) => {
  const score = (resource: 'materials' | 'stations' | 'users', name: string, schema?: string): number => tableNameScore(resource, { name, schema, view: false }).score
  t.ok(score('materials', 'MaterialBase') > score('materials', 'tblArtikel'))
  t.ok(score('materials', 'tblArtikel') > score('materials', 'ArtikelZusatz'))
  t.ok(score('materials', 'ArtikelZusatz') > score('materials', 'LagerArtikelbestand'))
  t.ok(score('materials', 'LagerArtikelbestand') > 0)
  t.ok(score('materials', 'Artikel') > score('materials', 'Artikel', 'archive'), 'a history schema counts against it')
  t.equal(score('materials', 'ArtikelHistory'), 15)
  t.equal(score('stations', 'Artikel'), 0)
  t.ok(score('stations', 'VLM') > 0)
  t.ok(score('users', 'gateway_users') > score('users', 'Users'))
})

t.test('abbreviated German, Dutch and Access names', async (t) => {
  const path = join(dir, 'abbreviated.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE T_ART (ART_ID INTEGER PRIMARY KEY, ART_NR CHAR(20) NOT NULL, BEZ1 VARCHAR(60) NOT NULL, MINBEST REAL, MAXBEST REAL, SPERR INTEGER, AENDDAT TEXT, ERFDAT TEXT);
    CREATE TABLE T_AP (AP_ID INTEGER PRIMARY KEY, AP_NAME VARCHAR(20) NOT NULL, AP_TYP CHAR(2), STEUERUNG VARCHAR(20), ADRESSE INTEGER, AKTIV CHAR(1));
    CREATE TABLE T_BENUTZER (BEN_ID INTEGER PRIMARY KEY, KENNUNG VARCHAR(30) NOT NULL, PWHASH VARCHAR(255) NOT NULL);
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.equal(found.resources.materials.table?.name, 'T_ART')
  t.match(mapped(found.resources.materials.mapping)?.columns, { id: 'ART_ID', materialNumber: 'ART_NR', name: 'BEZ1', minStock: 'MINBEST', maxStock: 'MAXBEST', modifiedAt: 'AENDDAT', createdAt: 'ERFDAT' })
  t.match(mapped(found.resources.materials.mapping)?.columns, { blocked: 'SPERR' }, 'a number flag needs no value map')
  t.equal(found.resources.stations.table?.name, 'T_AP')
  t.match(mapped(found.resources.stations.mapping)?.columns, { id: 'AP_ID', name: 'AP_NAME', controllerId: 'STEUERUNG', address: 'ADRESSE' })

  const dutch = join(dir, 'dutch.db')
  const nl = new BetterSqlite3(dutch)
  nl.exec(`
    CREATE TABLE ARTIKELEN (ID INTEGER PRIMARY KEY, ARTIKELNR VARCHAR(20) NOT NULL, OMSCHRIJVING VARCHAR(60) NOT NULL, EENHEID VARCHAR(5), VOORRAAD REAL, GEBLOKKEERD CHAR(1), GEWIJZIGD TEXT, AANGEMAAKT TEXT);
    CREATE TABLE tblItems (ItemID INTEGER PRIMARY KEY, "Item No" VARCHAR(20) NOT NULL, Description VARCHAR(60) NOT NULL, Weight REAL);
  `)
  nl.close()
  const nlDb = openDatabase(`sqlite:${dutch}`, { logger: silent })
  t.teardown(() => nlDb.close())
  const proposal = await introspect(nlDb, {})
  t.equal(proposal.resources.materials.table?.name, 'ARTIKELEN')
  t.match(mapped(proposal.resources.materials.mapping)?.columns, { materialNumber: 'ARTIKELNR', name: 'OMSCHRIJVING', unit: 'EENHEID', stockQuantity: 'VOORRAAD', modifiedAt: 'GEWIJZIGD', createdAt: 'AANGEMAAKT' })
  const access = await introspect(nlDb, { materials: { table: 'tblItems', columns: {} } })
  t.match(mapped(access.resources.materials.mapping)?.columns, { materialNumber: 'Item No', name: 'Description', weight: 'Weight' }, 'the only text column goes to the required name')
  t.notOk('description' in (mapped(access.resources.materials.mapping)?.columns ?? {}))
})

t.test('German names with a unit or a qualifier after the word, and a station table numbered by Nr', async (t) => {
  const path = join(dir, 'german-units.db')
  const raw = new BetterSqlite3(path)
  // a legacy program's SQLite file: columns without declared types (what the name says must carry them), and a
  // station table keyed by its number, not by an …ID
  raw.exec(`
    CREATE TABLE Artikel (ArtikelID INTEGER PRIMARY KEY, Artikelnummer VARCHAR(30) NOT NULL UNIQUE, Kurztext VARCHAR(60) NOT NULL, Langtext,
      "Gewicht (kg)", "Menge_Stück", Mindestmenge, Höchstmenge);
    CREATE TABLE Arbeitsplatz (Nr INTEGER NOT NULL UNIQUE, Bezeichnung VARCHAR(40) NOT NULL, Typ CHAR(1), Steuerung VARCHAR(20), Adresse INTEGER, Aktiv BIT);
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.same(mapped(found.resources.materials.mapping)?.columns, {
    id: 'ArtikelID', materialNumber: 'Artikelnummer', name: 'Kurztext', description: 'Langtext', weight: 'Gewicht (kg)', stockQuantity: 'Menge_Stück', minStock: 'Mindestmenge', maxStock: 'Höchstmenge'
  }, 'before: weight, stockQuantity, minStock and maxStock went unmatched')
  t.match(formatReport(found).join('\n'), /weight +Gewicht \(kg\) \(no declared type; by name\)/)
  t.same(mapped(found.resources.stations.mapping)?.columns, { id: 'Nr', name: 'Bezeichnung', type: 'Typ', controllerId: 'Steuerung', address: 'Adresse', enabled: 'Aktiv' },
    "the table's unique number column Nr is the id (before: no id)")
  t.match(formatReport(found).join('\n'), /id +Nr \(integer, not null; by the table's unique key, named …Nr\)/)

  // a Nr that is not unique is no key; a material table's unique Nr is still its number, and the id shares it
  const other = join(dir, 'german-nr.db')
  const raw2 = new BetterSqlite3(other)
  raw2.exec(`
    CREATE TABLE Artikel (Nr INTEGER NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL, Bestand REAL);
    CREATE TABLE Arbeitsplatz (Nr INTEGER, Bezeichnung VARCHAR(40) NOT NULL);
  `)
  raw2.close()
  const db2 = openDatabase(`sqlite:${other}`, { logger: silent })
  t.teardown(() => db2.close())
  const second = await introspect(db2, {})
  t.match(mapped(second.resources.materials.mapping)?.columns, { id: 'Nr', materialNumber: 'Nr' })
  t.notOk('id' in (mapped(second.resources.stations.mapping)?.columns ?? {}), 'a Nr without a unique index is not proposed as the id')
})

t.test('French, Italian and Swedish names, accents and all', async (t) => {
  const path = join(dir, 'romance.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE t_article (id_article INTEGER PRIMARY KEY, code_article VARCHAR(20) NOT NULL, "libellé" VARCHAR(60) NOT NULL, "unité" VARCHAR(5), code_barre VARCHAR(20),
      stock_mini REAL, stock_maxi REAL, poids REAL, "quantité" REAL, date_creation TEXT, date_modif TEXT);
    CREATE TABLE postazioni (id_postazione INTEGER PRIMARY KEY, nome VARCHAR(20) NOT NULL, tipo CHAR(3), magazzino VARCHAR(10), indirizzo INTEGER, attivo INTEGER);
    CREATE TABLE "användare" (id INTEGER PRIMARY KEY, "användarnamn" VARCHAR(30) NOT NULL, "lösenord" VARCHAR(255) NOT NULL, roll VARCHAR(10), token_version INTEGER NOT NULL DEFAULT 0);
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.equal(found.resources.materials.table?.name, 't_article')
  t.match(mapped(found.resources.materials.mapping)?.columns, {
    id: 'id_article', materialNumber: 'code_article', name: 'libellé', unit: 'unité', barcode: 'code_barre',
    minStock: 'stock_mini', maxStock: 'stock_maxi', weight: 'poids', stockQuantity: 'quantité', createdAt: 'date_creation', modifiedAt: 'date_modif'
  }, 'stock_mini is the minimum, not the stock')
  t.equal(found.resources.stations.table?.name, 'postazioni')
  t.match(mapped(found.resources.stations.mapping)?.columns, { id: 'id_postazione', name: 'nome', warehouse: 'magazzino', address: 'indirizzo', enabled: 'attivo' })
  t.equal(found.resources.users.table?.name, 'användare')
  t.match(mapped(found.resources.users.mapping)?.columns, { username: 'användarnamn', passwordHash: 'lösenord' })
})

t.test('Dutch names: artikelcode, a werkplek table with omschrijving, mag_code and H for handmatig', async (t) => {
  const path = join(dir, 'dutch-stock-items.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE stock_items (mag_code CHAR(3) NOT NULL, artikelcode CHAR(12) NOT NULL, omschrijving VARCHAR(60), eenheid CHAR(3), voorraad DECIMAL(12,3), PRIMARY KEY (mag_code, artikelcode));
    CREATE TABLE werkplekken (werkplek_nr INTEGER PRIMARY KEY, naam VARCHAR(30), omschrijving VARCHAR(80), soort CHAR(1) NOT NULL, mag_code CHAR(3) NOT NULL, actief CHAR(1));
    INSERT INTO werkplekken VALUES (1, 'Lift 1', 'Verticale lift', 'L', 'AMS', 'J'), (2, 'Carrousel', NULL, 'C', 'AMS', 'J'), (3, 'Rek 3', NULL, 'P', 'RTM', 'N'), (4, 'Handpost', NULL, 'H', 'RTM', 'J'),
      (5, 'Lift 2', NULL, 'L', 'EHV', 'J'), (6, 'Lift 3', NULL, 'l', 'EHV', 'j');
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // before: artikelcode, mag_code and the stations' omschrijving matched no field, and 'H' was a code not placed
  t.match(mapped(found.resources.materials.mapping)?.columns, { materialNumber: 'artikelcode', name: 'omschrijving', unit: 'eenheid', stockQuantity: 'voorraad' })
  // before: only "no column for id: … map it by hand", although the README's way for a composite key is the materialNumber's column
  t.ok(found.resources.materials.notes.some((n) => n.startsWith('id: no column is unique by itself; "id": "artikelcode" (the materialNumber\'s column, as for a table keyed by it) lists every row')), found.resources.materials.notes.join('\n'))
  // run again with the id mapped by hand as the note says: it stays (before: the proposal dropped it, and pasted over the old one it stopped the start)
  const configured = { ...mapped(found.resources.materials.mapping)!, columns: { ...mapped(found.resources.materials.mapping)!.columns, id: 'artikelcode' }, defaults: { mag_code: 'AMS' } }
  const again = await introspect(db, { materials: normalizeMapping(configured) })
  t.match(mapped(again.resources.materials.mapping)?.columns, { id: 'artikelcode', materialNumber: 'artikelcode' })
  t.notMatch(again.resources.materials.notes.join('\n'), /no column for id|id: no column is unique/)
  t.match(mapped(found.resources.stations.mapping)?.columns, {
    id: 'werkplek_nr', name: 'naam', description: 'omschrijving', warehouse: 'mag_code',
    type: { column: 'soort', values: { vlm: 'L', carousel: 'C', ptl: 'P', manual: 'H' } }
  })
  // before: "vlm": ["L", "l"], although the map matches codes regardless of case, as the flag's {"true": "J"} does beside a 'j'
  t.same(found.resources.stations.fields.find((f) => f.field === 'type')?.values, { vlm: 'L', carousel: 'C', ptl: 'P', manual: 'H' })
})

t.test('a French operator table: Opérateurs, Identifiant, Mot_de_passe, Dernière_connexion', async (t) => {
  const path = join(dir, 'french-operators.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`CREATE TABLE "Opérateurs" (Matricule INTEGER PRIMARY KEY, Identifiant VARCHAR(30) NOT NULL UNIQUE, Mot_de_passe VARCHAR(255), "Rôle" CHAR(1),
    Nom_complet VARCHAR(60), Actif CHAR(1), "Dernière_connexion" DATETIME, token_version INTEGER NOT NULL DEFAULT 0)`)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // before: no table looked like users, and the last login had no French word
  t.equal(found.resources.users.table?.name, 'Opérateurs')
  t.match(mapped(found.resources.users.mapping)?.columns, { username: 'Identifiant', passwordHash: 'Mot_de_passe', displayName: 'Nom_complet', lastLoginAt: 'Dernière_connexion' })
})

t.test('letters outside ASCII are part of a word: Quantité_Réelle, PowódBlokady, Hasło', async (t) => {
  t.equal(normalizeName('Hasło'), 'haslo', 'ł is l, as ø is o')
  t.same(nameTokens('PowódBlokady'), ['powod', 'blokady'])
  t.same(nameTokens('Quantité_Réelle'), ['quantite', 'reelle'])
  t.same(nameTokens('ArtID_Größe'), ['art', 'id', 'groesse'])
  const path = join(dir, 'accented-words.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`CREATE TABLE articles (id INTEGER PRIMARY KEY, code_article VARCHAR(20) NOT NULL, "libellé" VARCHAR(60) NOT NULL, "Qté_Réelle" REAL)`)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // before, the words broke at each é: 'q', 't', 'r', 'elle', none of them a word for the stock
  t.match(mapped(found.resources.materials.mapping)?.columns, { stockQuantity: 'Qté_Réelle' })
})

t.test('Swedish names written without their dots (Benamning, Sparrad, Andrad, Plockplatser, Losenord)', async (t) => {
  const path = join(dir, 'swedish-ascii.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE Artiklar (ArtikelNr VARCHAR(20) NOT NULL PRIMARY KEY, Benamning VARCHAR(80) NOT NULL, Beskrivning TEXT, Enhet TEXT NOT NULL DEFAULT 'ST',
      Streckkod CHAR(13), Vikt REAL, Sparrad CHAR(1) NOT NULL DEFAULT 'N', SparrOrsak TEXT, Saldo INTEGER, Skapad TEXT, Andrad INTEGER);
    INSERT INTO Artiklar (ArtikelNr, Benamning, Sparrad, Andrad) VALUES ('A1', 'Skruv', 'J', 1764200000), ('A2', 'Mutter', 'N', 1764200001);
    CREATE TABLE Plockplatser (PlatsId INTEGER PRIMARY KEY, PlatsNamn TEXT NOT NULL UNIQUE, Typ CHAR(1), Adress INTEGER, Aktiv INTEGER);
    CREATE TABLE Anvandare (AnvId INTEGER PRIMARY KEY, Anvandarnamn VARCHAR(30) NOT NULL UNIQUE, Losenord VARCHAR(255) NOT NULL, Roll VARCHAR(10), token_version INTEGER NOT NULL DEFAULT 0);
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // Beskrivning is the description: before, with Benamning unmatched, it was proposed as the name
  t.match(mapped(found.resources.materials.mapping)?.columns, {
    name: 'Benamning', description: 'Beskrivning', blocked: { column: 'Sparrad', values: { true: 'J', false: 'N' } }, blockReason: 'SparrOrsak',
    modifiedAt: { column: 'Andrad', format: 'unix' }
  })
  t.equal(found.resources.stations.table?.name, 'Plockplatser')
  t.equal(found.resources.users.table?.name, 'Anvandare')
  t.match(mapped(found.resources.users.mapping)?.columns, { username: 'Anvandarnamn', passwordHash: 'Losenord' })
})

t.test('Polish names: Towary, Indeks, Nazwa, Waga, Zablokowany, Stanowiska, Użytkownicy, Hasło', async (t) => {
  const path = join(dir, 'polish.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE Jednostki (Kod VARCHAR(5) PRIMARY KEY);
    INSERT INTO Jednostki VALUES ('szt');
    CREATE TABLE Towary (Id INTEGER PRIMARY KEY AUTOINCREMENT, Indeks VARCHAR(30) NOT NULL UNIQUE, Nazwa VARCHAR(80) NOT NULL, Opis VARCHAR(200),
      JednostkaMiary VARCHAR(5) NOT NULL DEFAULT 'szt' REFERENCES Jednostki (Kod), KodKreskowy VARCHAR(20), StanMinimalny DECIMAL(10,2),
      StanMaksymalny DECIMAL(10,2), Waga REAL, Zablokowany CHAR(1) NOT NULL DEFAULT 'N', "PowódBlokady" VARCHAR(100), "Ilość" DECIMAL(12,3),
      DataUtworzenia DATETIME, DataModyfikacji DATETIME);
    INSERT INTO Towary (Indeks, Nazwa, Zablokowany) VALUES ('PL-1', 'Śruba', 'T'), ('PL-2', 'Nakrętka', 'N');
    CREATE TABLE Stanowiska (IdStanowiska INTEGER PRIMARY KEY, Nazwa VARCHAR(40) NOT NULL UNIQUE, Opis VARCHAR(100), Rodzaj CHAR(1), Magazyn VARCHAR(10),
      Sterownik VARCHAR(20), Adres INTEGER, Aktywny CHAR(1) NOT NULL DEFAULT 'T');
    INSERT INTO Stanowiska (Nazwa, Aktywny) VALUES ('Winda 1', 'T'), ('Karuzela 1', 'N');
    CREATE TABLE "Użytkownicy" (IdUzytkownika INTEGER PRIMARY KEY, "Użytkownik" VARCHAR(30) NOT NULL UNIQUE, "Hasło" VARCHAR(128), ImieNazwisko VARCHAR(60),
      Rola CHAR(1), Aktywny CHAR(1), OstatnieLogowanie DATETIME, TokenVersion INTEGER NOT NULL DEFAULT 0);
    INSERT INTO "Użytkownicy" ("Użytkownik", Aktywny) VALUES ('jkowalski', 'T'), ('anowak', 'N');
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.equal(found.resources.materials.table?.name, 'Towary')
  t.same(mapped(found.resources.materials.mapping)?.columns, {
    id: 'Id', materialNumber: 'Indeks', name: 'Nazwa', description: 'Opis', unit: 'JednostkaMiary', barcode: 'KodKreskowy',
    minStock: 'StanMinimalny', maxStock: 'StanMaksymalny', weight: 'Waga', blocked: { column: 'Zablokowany', values: { true: 'T', false: 'N' } },
    blockReason: 'PowódBlokady', stockQuantity: 'Ilość', createdAt: 'DataUtworzenia', modifiedAt: 'DataModyfikacji'
  }, 'the T/N flag of Tak/Nie too')
  t.equal(found.resources.stations.table?.name, 'Stanowiska')
  t.match(mapped(found.resources.stations.mapping)?.columns, {
    id: 'IdStanowiska', name: 'Nazwa', description: 'Opis', type: 'Rodzaj', warehouse: 'Magazyn', controllerId: 'Sterownik', address: 'Adres',
    enabled: { column: 'Aktywny', values: { true: 'T', false: 'N' } }
  })
  t.equal(found.resources.users.table?.name, 'Użytkownicy')
  t.match(mapped(found.resources.users.mapping)?.columns, {
    id: 'IdUzytkownika', username: 'Użytkownik', passwordHash: 'Hasło', displayName: 'ImieNazwisko', type: 'Rola', enabled: { column: 'Aktywny', values: { true: 'T', false: 'N' } }, lastLoginAt: 'OstatnieLogowanie'
  })
})

t.test('the picking system\'s own user table without the gateway\'s columns: the report says which to add', async (t) => {
  const path = join(dir, 'users-without-token-version.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE Operators (OperatorId INTEGER PRIMARY KEY, Login VARCHAR(30) NOT NULL UNIQUE, Password VARCHAR(128), Role CHAR(1), Active INTEGER, Modified DATETIME);
    CREATE TABLE Staff (StaffId INTEGER PRIMARY KEY, Login VARCHAR(30) NOT NULL UNIQUE, Role CHAR(1), TokenVersion INTEGER NOT NULL DEFAULT 0);
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.equal(found.resources.users.table, undefined)
  // before, "which only the gateway's own table has": as if the table could not serve, while a column added makes it (README)
  t.match(found.resources.users.why, "Operators (no column for tokenVersion, which only the gateway's own table has until one is added: ALTER TABLE … ADD TokenVersion INT NOT NULL DEFAULT 0, then introspect again)")
  t.match(found.resources.users.why, 'Staff (no column for passwordHash, which only the gateway\'s own table has until one is added: ALTER TABLE … ADD PasswordHash VARCHAR(255), then introspect again)')
})

t.test('English abbreviations of another vendor: ITEM_CODE, DESCR, HOLD_FLAG, WS_ID, WHSE, OPERATOR', async (t) => {
  const path = join(dir, 'english.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE ITEM_MASTER (ITEM_ID INTEGER PRIMARY KEY, ITEM_CODE VARCHAR(20) NOT NULL UNIQUE, DESCR VARCHAR(60) NOT NULL, LONG_DESC TEXT, UOM VARCHAR(4),
      EAN VARCHAR(14), REORDER_PT NUMERIC(12,3), MAX_QTY NUMERIC(12,3), NET_WT REAL, HOLD_FLAG CHAR(1) NOT NULL DEFAULT 'N', HOLD_REASON VARCHAR(40),
      QOH NUMERIC(14,3), ADDED_ON TEXT, LAST_UPD TEXT);
    INSERT INTO ITEM_MASTER (ITEM_CODE, DESCR, HOLD_FLAG) VALUES ('I-1', 'Bolt', 'Y'), ('I-2', 'Nut', 'N');
    CREATE TABLE WORKSTATION (WS_ID INTEGER NOT NULL PRIMARY KEY, WS_NAME VARCHAR(30) NOT NULL UNIQUE, WS_DESC TEXT, WS_KIND INTEGER, WHSE VARCHAR(8),
      CTRL_ID VARCHAR(20), CTRL_ADDR INTEGER, ACTIVE INTEGER NOT NULL DEFAULT 1) WITHOUT ROWID;
    CREATE TABLE OPERATOR (OP_ID INTEGER PRIMARY KEY, LOGON VARCHAR(30) NOT NULL UNIQUE, PW_HASH VARCHAR(255) NOT NULL, ROLE VARCHAR(16), OP_NAME VARCHAR(60), TOKEN_VERSION INTEGER NOT NULL DEFAULT 0);
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.equal(found.resources.materials.table?.name, 'ITEM_MASTER')
  t.match(mapped(found.resources.materials.mapping)?.columns, {
    id: 'ITEM_ID', materialNumber: 'ITEM_CODE', name: 'DESCR', description: 'LONG_DESC', unit: 'UOM', barcode: 'EAN', minStock: 'REORDER_PT', maxStock: 'MAX_QTY',
    weight: 'NET_WT', blocked: { column: 'HOLD_FLAG', values: { true: 'Y', false: 'N' } }, blockReason: 'HOLD_REASON', stockQuantity: 'QOH', createdAt: 'ADDED_ON', modifiedAt: 'LAST_UPD'
  }, 'before: name was LONG_DESC, and ITEM_CODE, HOLD_FLAG and the times went unmatched')
  t.equal(found.resources.stations.table?.name, 'WORKSTATION')
  t.match(mapped(found.resources.stations.mapping)?.columns, { id: 'WS_ID', name: 'WS_NAME', description: 'WS_DESC', type: 'WS_KIND', warehouse: 'WHSE', controllerId: 'CTRL_ID', address: 'CTRL_ADDR', enabled: 'ACTIVE' },
    'WS_ID, the key of a WITHOUT ROWID table, is the id')
  t.match(found.resources.stations.notes.join('\n'), /newIds/, 'which needs newIds: the database gives no ids')
  t.equal(found.resources.users.table?.name, 'OPERATOR')
  t.match(mapped(found.resources.users.mapping)?.columns, { id: 'OP_ID', username: 'LOGON', passwordHash: 'PW_HASH', type: 'ROLE', displayName: 'OP_NAME' })
})

t.test('a user type column of the picking system\'s codes: each code that is no user type is named, none is guessed', async (t) => {
  const path = join(dir, 'user-codes.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE OPERATOR (OP_ID INTEGER PRIMARY KEY, LOGON VARCHAR(30) NOT NULL UNIQUE, PW_HASH VARCHAR(255), ROLE CHAR(1) NOT NULL DEFAULT 'U', TOKEN_VERSION INTEGER NOT NULL DEFAULT 0);
    INSERT INTO OPERATOR (LOGON, ROLE) VALUES ('a', 'A'), ('b', 'U'), ('c', 'U'), ('d', 'S'), ('e', 'U'), ('f', 'S');
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  const type = found.resources.users.fields.find((f) => f.field === 'type')
  t.equal(type?.column.name, 'ROLE')
  t.equal(type?.values, undefined, 'no value map guessed: a wrong one would give rights')
  t.match(type?.notes.join('\n'), /codes that are no user type .*no rights at all.*: "U", "S", "A"; map each type .*\{"column": "ROLE", "values": \{"admin": …, "user": …, "application": …\}\}/)
  const col = (name: string): ColumnInfo => ({ name, type: 'varchar', nullable: false, hasDefault: false, identity: false, computed: false, maxLength: 16 })
  const rows = (...values: unknown[]): CodeCount[] => values.map((value) => ({ value, count: 1 }))
  t.same(proposeUserTypeMap(col('Rolle'), 'text', rows('admin', 'user ', 'application')), { usable: true, notes: [] }, 'already the API values')
  t.match(proposeUserTypeMap(col('Rolle'), 'integer', rows(1, 2, 3)).notes, [/: 1, 2, 3;/])
})

t.test('a material master keyed by its article number: id and materialNumber share the column', async (t) => {
  const path = join(dir, 'keyed.db')
  const raw = new BetterSqlite3(path)
  raw.exec('CREATE TABLE Artikel (ArtikelNr VARCHAR(20) NOT NULL PRIMARY KEY, Bezeichnung VARCHAR(60) NOT NULL, Einheit VARCHAR(5), Mandant INTEGER NOT NULL)')
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.match(mapped(found.resources.materials.mapping)?.columns, { id: 'ArtikelNr', materialNumber: 'ArtikelNr', name: 'Bezeichnung', unit: 'Einheit' })
  t.notMatch(found.resources.materials.notes.join('\n'), /no column for id|neither an identity/)
  t.match(found.resources.materials.notes.join('\n'), /column 'Mandant' \(integer\) is NOT NULL without a default/)
  // run again with that proposal and defaults configured: they stay, and the note is gone
  const configured = { ...mapped(found.resources.materials.mapping)!, defaults: { Mandant: 1 } }
  const again = await introspect(db, { materials: normalizeMapping(configured) })
  t.same(again.resources.materials.mapping?.defaults, { Mandant: 1 })
  t.notMatch(again.resources.materials.notes.join('\n'), /Mandant/)
})

t.test('introspect again with the configuration: the hand-written value maps and a column\'s time zone stay', async (t) => {
  const path = join(dir, 'configured-maps.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE Stanowiska (IdStanowiska INTEGER PRIMARY KEY, Nazwa VARCHAR(40) NOT NULL UNIQUE, TypStanowiska INTEGER NOT NULL, Aktywny CHAR(1), DataModyfikacji DATETIME);
    INSERT INTO Stanowiska (Nazwa, TypStanowiska, Aktywny) VALUES ('Winda 1', 1, 'A'), ('PTL', 3, 'I');
    CREATE TABLE Uzytkownicy (Id INTEGER PRIMARY KEY, Login VARCHAR(30) NOT NULL UNIQUE, Haslo VARCHAR(128), Rola CHAR(1) NOT NULL, Aktywny CHAR(1) NOT NULL,
      ImieNazwisko VARCHAR(60), OstatnieLogowanie DATETIME, DataUtworzenia DATETIME, DataModyfikacji DATETIME, TokenVersion INT NOT NULL DEFAULT 0);
    INSERT INTO Uzytkownicy (Login, Rola, Aktywny) VALUES ('jkowalski', 'A', 'T'), ('anowak', 'O', 'T');
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const first = await introspect(db, {})
  t.equal(first.resources.users.mapping?.columns.type, 'Rola', 'a user type is never guessed')
  t.equal(first.resources.stations.mapping?.columns.enabled, null, 'A/I reads as no flag: enabled is proposed as no column')
  const stations = { table: 'Stanowiska', timeZone: 'Europe/Warsaw', columns: { id: 'IdStanowiska', name: 'Nazwa', description: null, warehouse: null, controllerId: null, address: null, createdAt: null,
    type: { column: 'TypStanowiska', values: { vlm: 1, carousel: 2, ptl: 3, manual: 4 } }, enabled: { column: 'Aktywny', values: { true: 'A', false: 'I' } }, modifiedAt: { column: 'DataModyfikacji', timeZone: 'UTC' } } }
  const users = { ...first.resources.users.mapping!, columns: { ...first.resources.users.mapping!.columns, type: { column: 'Rola', values: { admin: 'A', user: 'O', application: 'S' } } } }
  const config = validateConfig({ auth: { jwtSecret: SECRET }, database: { url: `sqlite:${path}` }, mapping: { stations, users } })
  const again = await introspect(db, mappingsOf(config))
  // before, the proposal to paste again gave 'Rola' bare (every user without rights, the admins too) and 'TypStanowiska' bare,
  // left enabled out, so null, and dropped the column's own time zone
  t.same(again.resources.users.mapping?.columns.type, { column: 'Rola', values: { admin: 'A', user: 'O', application: 'S' } })
  t.same(again.resources.stations.mapping?.columns.type, { column: 'TypStanowiska', values: { vlm: 1, carousel: 2, ptl: 3, manual: 4 } })
  t.same(again.resources.stations.mapping?.columns.enabled, { column: 'Aktywny', values: { true: 'A', false: 'I' } })
  t.same(again.resources.stations.mapping?.columns.modifiedAt, { column: 'DataModyfikacji', timeZone: 'UTC' })
  t.notMatch(again.resources.stations.notes.join('\n'), /enabled: column 'Aktywny' holds/)
})

t.test('a station table keyed by its code, and a material table keyed by GUIDs: the text key is the id, and the mapping proposed passes the start-up check', async (t) => {
  const path = join(dir, 'text-keyed.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`CREATE TABLE Arbeitsplatz (Code VARCHAR(20) NOT NULL PRIMARY KEY, Bezeichnung VARCHAR(200), Art VARCHAR(16) NOT NULL DEFAULT 'manual', Lager VARCHAR(64), Steuerung VARCHAR(64), Adresse INTEGER, Aktiv INTEGER NOT NULL DEFAULT 1);
    INSERT INTO Arbeitsplatz VALUES ('PTL-01', 'Zone A', 'ptl', 'L1', 'ctl-1', 3, 1), ('VLM-1', 'Lift', 'vlm', 'L1', 'ctl-1', 7, 1);
    CREATE TABLE Artikel (ArtGuid UNIQUEIDENTIFIER NOT NULL PRIMARY KEY DEFAULT (lower(hex(randomblob(16)))), ArtikelNr VARCHAR(20) NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL)`)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // before: no id proposed, and a note that the key column would make every insert fail
  t.match(mapped(found.resources.stations.mapping)?.columns, { id: 'Code', name: 'Code', description: 'Bezeichnung', type: 'Art', controllerId: 'Steuerung', address: 'Adresse' }, "the code is the station's id and name; its text the description")
  t.notMatch(found.resources.stations.notes.join('\n'), /no column for id|'Code' .* NOT NULL without a default/)
  t.match(mapped(found.resources.materials.mapping)?.columns, { id: 'ArtGuid', materialNumber: 'ArtikelNr', name: 'Bezeichnung' }, 'the GUID key the database fills is the id alone')
  const mappings = mappingsOf(validateConfig({ auth: { jwtSecret: SECRET }, database: { url: `sqlite:${path}` }, mapping: { stations: found.resources.stations.mapping!, materials: found.resources.materials.mapping! } }))
  const { problems } = await inspectStorage(db, mappings)
  t.same(problems.filter((p) => !p.startsWith('users:')), [], 'both proposals start')
})

t.test('times kept as numbers or digits: the format their values show, checked by the gateway as it starts', async (t) => {
  const path = join(dir, 'times.db')
  const raw = new BetterSqlite3(path)
  raw.exec('CREATE TABLE Artikel (ArtID INTEGER PRIMARY KEY, ArtNr VARCHAR(20) NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL, ErstelltAm INTEGER, Geaendert INTEGER)')
  raw.exec("INSERT INTO Artikel (ArtNr, Bezeichnung, ErstelltAm, Geaendert) VALUES ('1', 'a', 20240101, 1712052000), ('2', 'b', 0, 1712052999), ('3', 'c', 20231231, NULL)")
  raw.exec('CREATE TABLE Arbeitsplatz (WpID INTEGER PRIMARY KEY, WpName VARCHAR(20) NOT NULL, Angelegt INTEGER, Geaendert INTEGER)')
  raw.exec("INSERT INTO Arbeitsplatz (WpName, Angelegt, Geaendert) VALUES ('W1', 42, 1712052000000), ('W2', 20240101, 1712052000123)")
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.match(found.resources.materials.mapping?.columns, { createdAt: { column: 'ErstelltAm', format: 'yyyymmdd' }, modifiedAt: { column: 'Geaendert', format: 'unix' } }, '0 is a legacy "no date", not a format')
  t.match(found.resources.materials.fields.find((m) => m.field === 'modifiedAt')?.notes, ['holds Unix time in seconds: proposed "format": "unix"'])
  const stations = found.resources.stations
  t.match(stations.mapping?.columns, { modifiedAt: { column: 'Geaendert', format: 'unix-ms' }, createdAt: null }, 'mixed values: no format, mapped to null')
  t.match(stations.notes.join('\n'), /createdAt: column 'Angelegt' \(integer\) may hold times, but its values show no format the gateway knows/)
  // the proposal is one the gateway starts with
  const config = validateConfig({ database: { url: `sqlite:${path}` }, auth: { jwtSecret: SECRET }, mapping: { materials: found.resources.materials.mapping } })
  t.same((await inspectStorage(db, mappingsOf(config))).problems.filter((p) => p.startsWith('materials.')), [])
})

t.test('SQLite: a time column whose values are all text of whole seconds (CURRENT_TIMESTAMP) gets "format": "yyyy-mm-dd hh:mm:ss", which the gateway starts with', async (t) => {
  const path = join(dir, 'times-seconds.db')
  const raw = new BetterSqlite3(path)
  raw.exec('CREATE TABLE Artikel (ArtID INTEGER PRIMARY KEY, ArtNr VARCHAR(20) NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL, ErstelltAm TEXT DEFAULT CURRENT_TIMESTAMP, Geaendert DATETIME)')
  raw.exec("INSERT INTO Artikel (ArtNr, Bezeichnung, Geaendert) VALUES ('1', 'a', '2024-04-02 10:00:00.250'), ('2', 'b', '2024-04-02 10:00:01'), ('3', 'c', NULL)")
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.match(found.resources.materials.mapping?.columns, { createdAt: { column: 'ErstelltAm', format: 'yyyy-mm-dd hh:mm:ss' }, modifiedAt: 'Geaendert' }, 'a value with milliseconds among them: no format')
  t.same(found.resources.materials.fields.find((m) => m.field === 'createdAt')?.notes, ['holds times as YYYY-MM-DD HH:MM:SS text in whole seconds, as SQLite\'s CURRENT_TIMESTAMP writes them: proposed "format": "yyyy-mm-dd hh:mm:ss"'])
  const config = validateConfig({ database: { url: `sqlite:${path}` }, auth: { jwtSecret: SECRET }, mapping: { materials: found.resources.materials.mapping } })
  t.same((await inspectStorage(db, mappingsOf(config))).problems.filter((p) => p.startsWith('materials.')), [])
})

t.test('a time column with a few values of no format among many dates: the format proposed, the misfits named', async (t) => {
  const path = join(dir, 'times-stray.db')
  const raw = new BetterSqlite3(path)
  raw.exec('CREATE TABLE Artikel (ArtID INTEGER PRIMARY KEY, ArtNr VARCHAR(20) NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL, Angelegt INTEGER)')
  const insert = raw.prepare("INSERT INTO Artikel (ArtNr, Bezeichnung, Angelegt) VALUES (?, 'a', ?)")
  for (let i = 0; i < 200; i++) insert.run(`A${i}`, 20230101 + 100 * (i % 12) + (i % 28))
  // a typo the picking system took twice, most frequent of all distinct values but far fewer than the dates
  insert.run('B1', 2024010)
  insert.run('B2', 2024010)
  insert.run('B3', 2024010)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.match(found.resources.materials.mapping?.columns, { createdAt: { column: 'Angelegt', format: 'yyyymmdd' } })
  t.same(found.resources.materials.fields.find((m) => m.field === 'createdAt')?.notes, [
    'holds dates as YYYYMMDD: proposed "format": "yyyymmdd"',
    '3 of the 203 rows with a date looked at hold values that do not fit it, such as 2024010: they read as null under it (and are logged once); correct them in the database, or check the format'
  ])
})

t.test('time columns named by their word and how the time is kept: CREATED_MS, LAST_MODIFIED_EPOCH, INSERT_TIME, MODIFY_TS', async (t) => {
  const pairs: Array<[string, string, number, string]> = [
    ['CREATED_MS', 'CHANGED_MS', 1795320693301, 'unix-ms'],
    ['CREATED_EPOCH', 'LAST_MODIFIED_EPOCH', 1795320693, 'unix'],
    ['INSERT_TIME', 'MODIFY_TS', 1795320693, 'unix'],
    ['CREATION_TIMESTAMP', 'MODIFICATION_TIMESTAMP', 1795320693, 'unix'],
    ['CREATED_TIME', 'UPDATED_TIME', 1795320693, 'unix']
  ]
  for (const [created, modified, value, format] of pairs) {
    const path = join(dir, `${created}.db`)
    const raw = new BetterSqlite3(path)
    raw.exec(`CREATE TABLE PRODUCT (PRODUCT_ID INTEGER PRIMARY KEY, SKU TEXT NOT NULL UNIQUE, TITLE TEXT, CREATED_BY TEXT, ${created} INTEGER, ${modified} INTEGER)`)
    raw.exec(`INSERT INTO PRODUCT (SKU, TITLE, ${created}, ${modified}) VALUES ('A-1', 'a', ${value}, ${value})`)
    raw.close()
    const db = openDatabase(`sqlite:${path}`, { logger: silent })
    const found = await introspect(db, {})
    db.close()
    t.match(found.resources.materials.mapping?.columns, { createdAt: { column: created, format }, modifiedAt: { column: modified, format } }, `${created} and ${modified}: before, both went unmatched`)
  }
})

t.test('time columns in Hungarian notation (dtmChanged CHAR(14), datCreated INTEGER): proposed with their formats', async (t) => {
  const path = join(dir, 'hungarian.db')
  const raw = new BetterSqlite3(path)
  raw.exec('CREATE TABLE tblArticle (lngArtID INTEGER PRIMARY KEY, strArtNo CHAR(20) NOT NULL UNIQUE, strName TEXT NOT NULL, datCreated INTEGER, dtmChanged CHAR(14))')
  raw.exec("INSERT INTO tblArticle (strArtNo, strName, datCreated, dtmChanged) VALUES ('A-1                 ', 'a', 1712052000, '20241107153012'), ('A-2                 ', 'b', 1712052999, NULL)")
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // before: both were 'no column' (the word after the type prefix scored too low for a number or text column)
  t.match(found.resources.materials.mapping?.columns, { createdAt: { column: 'datCreated', format: 'unix' }, modifiedAt: { column: 'dtmChanged', format: 'yyyymmddhhmmss' } })
  const config = validateConfig({ database: { url: `sqlite:${path}` }, auth: { jwtSecret: SECRET }, mapping: { materials: found.resources.materials.mapping } })
  t.same((await inspectStorage(db, mappingsOf(config))).problems.filter((p) => p.startsWith('materials.')), [], 'the proposal starts')
})

t.test('SQLite text of date digits and a REAL of Unix time: proposed with their formats', async (t) => {
  const path = join(dir, 'times2.db')
  const raw = new BetterSqlite3(path)
  raw.exec('CREATE TABLE Artikel (ArtID INTEGER PRIMARY KEY, ArtNr VARCHAR(20) NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL, Angelegt CHAR(8), Geaendert REAL)')
  raw.exec("INSERT INTO Artikel (ArtNr, Bezeichnung, Angelegt, Geaendert) VALUES ('1', 'a', '20240101', 1712052000.5), ('2', 'b', '        ', 1712052999)")
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.match(found.resources.materials.mapping?.columns, { createdAt: { column: 'Angelegt', format: 'yyyymmdd' }, modifiedAt: { column: 'Geaendert', format: 'unix' } })
})

t.test('a SQLite DATETIME column of Unix seconds (a trigger\'s strftime(\'%s\')): proposed with format unix, and ISO text beside it with none', async (t) => {
  const path = join(dir, 'times3.db')
  const raw = new BetterSqlite3(path)
  raw.exec("CREATE TABLE Artikel (ArtID INTEGER PRIMARY KEY, ArtNr VARCHAR(20) NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL, Angelegt DATETIME, Geaendert DATETIME DEFAULT (strftime('%s', 'now')))")
  raw.exec("INSERT INTO Artikel (ArtNr, Bezeichnung, Angelegt, Geaendert) VALUES ('1', 'a', '2024-01-01 10:00:00.000', 1712052000), ('2', 'b', '2024-01-02T10:00:00Z', strftime('%s', 'now'))")
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.match(found.resources.materials.mapping?.columns, { createdAt: 'Angelegt', modifiedAt: { column: 'Geaendert', format: 'unix' } })
  const config = validateConfig({ database: { url: `sqlite:${path}` }, auth: { jwtSecret: SECRET }, mapping: { materials: found.resources.materials.mapping } })
  t.same((await inspectStorage(db, mappingsOf(config))).problems.filter((p) => p.startsWith('materials.')), [], 'the proposal starts')
})

t.test('a SQLite flag column without a declared type: its text codes get a value map, its numbers alone none', async (t) => {
  const path = join(dir, 'untyped-flags.db')
  const raw = new BetterSqlite3(path)
  raw.exec('CREATE TABLE Artikel (ArtID INTEGER PRIMARY KEY, ArtNr VARCHAR(20) NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL, Gesperrt)')
  raw.exec("INSERT INTO Artikel (ArtNr, Bezeichnung, Gesperrt) VALUES ('1', 'a', 'J'), ('2', 'b', 'J'), ('3', 'c', 'J'), ('4', 'd', -1), ('5', 'e', -1), ('6', 'f', 'j '), ('7', 'g', 'N'), ('8', 'h', 'N'), ('9', 'i', 0), ('10', 'j', NULL)")
  raw.exec('CREATE TABLE Arbeitsplatz (WpID INTEGER PRIMARY KEY, WpName VARCHAR(20) NOT NULL UNIQUE, Aktiv)')
  raw.exec("INSERT INTO Arbeitsplatz (WpName, Aktiv) VALUES ('A', 1), ('B', 0)")
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // before: no map, so 'J' and 'N' read as null and true was written as 1
  t.same(found.resources.materials.mapping?.columns.blocked, { column: 'Gesperrt', values: { true: ['J', -1], false: ['N', 0] } }, "J/N text beside VB's -1/0 numbers ('j ' is 'J')")
  t.equal(found.resources.stations.mapping?.columns.enabled, 'Aktiv', '0/1 alone reads as it is')
  const config = validateConfig({ database: { url: `sqlite:${path}` }, auth: { jwtSecret: SECRET }, mapping: { materials: found.resources.materials.mapping } })
  t.same((await inspectStorage(db, mappingsOf(config))).problems.filter((p) => p.startsWith('materials.')), [], 'the proposal is one the gateway starts with')
})

t.test('a SQLite flag column declared BOOLEAN or INTEGER keeps text too: its text codes get a value map', async (t) => {
  const path = join(dir, 'typed-flags.db')
  const raw = new BetterSqlite3(path)
  raw.exec('CREATE TABLE Artikel (ArtID INTEGER PRIMARY KEY, ArtNr VARCHAR(20) NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL, Gesperrt BOOLEAN)')
  raw.exec("INSERT INTO Artikel (ArtNr, Bezeichnung, Gesperrt) VALUES ('1', 'a', 'J'), ('2', 'b', 'J'), ('3', 'c', -1), ('4', 'd', 'N'), ('5', 'e', 0), ('6', 'f', NULL)")
  raw.exec('CREATE TABLE Arbeitsplatz (WpID INTEGER PRIMARY KEY, WpName VARCHAR(20) NOT NULL UNIQUE, Aktiv INTEGER)')
  raw.exec("INSERT INTO Arbeitsplatz (WpName, Aktiv) VALUES ('A', 'Y'), ('B', 'Y'), ('C', 1), ('D', 'N')")
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // before: a declared type hid the text, so 'J' and 'N' read as null and no note said so
  t.same(found.resources.materials.mapping?.columns.blocked, { column: 'Gesperrt', values: { true: ['J', -1], false: ['N', 0] } }, 'J/N text in a BOOLEAN column')
  t.same(found.resources.stations.mapping?.columns.enabled, { column: 'Aktiv', values: { true: ['Y', 1], false: 'N' } }, 'Y/N text in an INTEGER column')
  const config = validateConfig({ database: { url: `sqlite:${path}` }, auth: { jwtSecret: SECRET }, mapping: { materials: found.resources.materials.mapping } })
  t.same((await inspectStorage(db, mappingsOf(config))).problems.filter((p) => p.startsWith('materials.')), [], 'the proposal is one the gateway starts with')
})

t.test("a J/N flag holding 'j ' and 'X' too: the proposal lists 'J' alone, which finds 'j ', and names 'X' instead of placing it", async (t) => {
  const path = join(dir, 'ticked-flags.db')
  const raw = new BetterSqlite3(path)
  raw.exec('CREATE TABLE Artikel (ArtID INTEGER PRIMARY KEY, ArtNr VARCHAR(20) NOT NULL UNIQUE, Bezeichnung VARCHAR(60) NOT NULL, Gesperrt CHAR(2) NOT NULL)')
  raw.exec("INSERT INTO Artikel (ArtNr, Bezeichnung, Gesperrt) VALUES ('1', 'a', 'J'), ('2', 'b', 'J'), ('3', 'c', 'j '), ('4', 'd', 'X'), ('5', 'e', 'N'), ('6', 'f', 'N'), ('7', 'g', 'N')")
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // before: {"true": ["J", "j", "X"], "false": "N"}, X placed as true without a note
  t.same(found.resources.materials.mapping?.columns.blocked, { column: 'Gesperrt', values: { true: 'J', false: 'N' } })
  t.match(formatReport(found).join('\n'), 'codes not placed (returned as stored until mapped): "X", a ticked mark beside "J" for true')
  const config = validateConfig({ database: { url: `sqlite:${path}` }, auth: { jwtSecret: SECRET }, mapping: { materials: found.resources.materials.mapping } })
  t.same((await inspectStorage(db, mappingsOf(config))).problems.filter((p) => p.startsWith('materials.')), [], 'the proposal starts')
  // 'J' alone is enough: reads and filters match the stored 'j ' regardless of case and trailing blanks
  const repo = await new Repository(db, materials, mappingsOf(config).materials).learn()
  const rows = async (query: Record<string, string>): Promise<Array<[unknown, unknown]>> =>
    (await repo.list(parseListQuery({ sort: 'materialNumber', ...query }, materials))).rows.map((r) => [r.materialNumber, r.blocked])
  t.same(await rows({}), [['1', true], ['2', true], ['3', true], ['4', 'X'], ['5', false], ['6', false], ['7', false]], "'j ' reads as true, 'X' as stored")
  t.same(await rows({ blocked: 'true' }), [['1', true], ['2', true], ['3', true]], "blocked=true finds 'j '")
})

/** timeFormatOf for values without counts (one row each) */
const guessTimeFormat = (category: Category, values: unknown[], julian = false) => timeFormatOf(category, values.map((value) => ({ value, count: 1 })), julian).format

t.test('guessTimeFormat', async (t) => {
  t.equal(guessTimeFormat('integer', [20240101, 19991231, null, 0, 99999999]), 'yyyymmdd', '0 and 99999999: no date')
  t.equal(guessTimeFormat('integer', [20240101123000]), 'yyyymmddhhmmss')
  t.equal(guessTimeFormat('decimal', [1712052000, 999999999]), 'unix')
  t.equal(guessTimeFormat('integer', [1712052000123]), 'unix-ms')
  t.equal(guessTimeFormat('text', ['20240101', '  ', '00000000']), 'yyyymmdd')
  t.equal(guessTimeFormat('text', ['1712052000']), undefined, 'text of Unix time does not sort as time')
  t.equal(guessTimeFormat('integer', [20240101, 1712052000]), undefined, 'mixed')
  t.equal(guessTimeFormat('integer', [20241301]), undefined, 'no calendar date')
  t.equal(guessTimeFormat('integer', []), undefined, 'nothing to go by')
  // SQLite's julianday(): only where SQLite reads it (the third argument), never on SQL Server
  t.equal(guessTimeFormat('float', [2460403.25, 2460404.5123456, null, 2460403], true), 'julianday')
  t.equal(guessTimeFormat('float', [2460403.25], false), undefined, 'SQL Server: no Julian days')
  t.equal(guessTimeFormat('float', [2460403.25, 1712052000], true), undefined, 'mixed with Unix time')
  t.equal(guessTimeFormat('float', [1712052000.5], true), 'unix', 'Unix time in a REAL column is still Unix time')
  t.equal(guessTimeFormat('text', ['2460403.25'], true), undefined, 'text is no Julian day')
  // SQLite's CURRENT_TIMESTAMP: every value text of whole seconds, so that the gateway writes that form too
  t.equal(guessTimeFormat('text', ['2024-04-02 10:00:00', null, '2024-04-03 23:59:59'], true), 'yyyy-mm-dd hh:mm:ss')
  t.equal(guessTimeFormat('time', ['2024-04-02 10:00:00'], true), 'yyyy-mm-dd hh:mm:ss', 'a DATETIME column too')
  t.equal(guessTimeFormat('text', ['2024-04-02 10:00:00'], false), undefined, 'SQL Server: no such format')
  t.equal(guessTimeFormat('text', ['2024-04-02 10:00:00', '2024-04-02 10:00:00.250'], true), undefined, 'one value with milliseconds: no format')
  t.equal(guessTimeFormat('text', ['2024-04-02 10:00:00', '2024-04-02T10:00:00'], true), undefined, 'one with a T: no format')
  t.equal(guessTimeFormat('text', ['2024-04-02 10:00:00', ''], true), undefined, 'a blank is not of the form')
  t.equal(guessTimeFormat('text', [null], true), undefined, 'nothing to go by')
  // one stray value among many good ones: the format stands, and the stray value is named
  t.same(timeFormatOf('integer', [{ value: 20240101, count: 30 }, { value: 2024010, count: 2 }, { value: 0, count: 5 }, { value: 20240102, count: 20 }]),
    { format: 'yyyymmdd', rows: 52, misfits: [{ value: 2024010, count: 2 }] }, 'a typo in 2 of 52 rows')
  t.same(timeFormatOf('integer', [{ value: 1712052000, count: 9 }, { value: 20240101, count: 1 }]).format, 'unix', '90% of the rows')
  t.same(timeFormatOf('integer', [{ value: 1712052000, count: 18 }, { value: 20240101, count: 1 }, { value: 'x', count: 1 }]).format, 'unix', '90%, however the rest is made up')
  t.same(timeFormatOf('integer', [{ value: 1712052000, count: 8 }, { value: 20240101, count: 2 }, { value: 'x', count: 1 }]), { rows: 11, misfits: [] }, 'under 90%: mixed, no format')
})

t.test('boolean value maps', async (t) => {
  const col = (name: string): ColumnInfo => ({ name, type: 'char', maxLength: 1, nullable: false, hasDefault: false, identity: false, computed: false })
  const rows = (...values: unknown[]): CodeCount[] => values.map((value, i) => ({ value, count: 10 - i }))
  t.same(proposeBooleanMap(col('Locked'), 'text', rows('N', 'Y')), { usable: true, values: { true: 'Y', false: 'N' }, notes: [] })
  t.same(proposeBooleanMap(col('Locked'), 'text', rows('n', 'Y', 'y', null)).values, { true: 'Y', false: 'n' }, "'Y' and 'y' are one code (maps match regardless of case); NULL is no code")
  t.same(proposeBooleanMap(col('Locked'), 'text', rows('N', 'y', 'Y')).values, { true: 'y', false: 'N' }, 'spelled as most rows spell it')
  t.same(proposeBooleanMap(col('Sperre'), 'text', rows('X ', ' ')).values, { true: 'X', false: '' }, 'X and blank, padding removed')
  // before: blank, in the most rows, was the code written, where the program itself writes 'N' (u1's VB6 table)
  t.same(proposeBooleanMap(col('bolLocked'), 'text', rows(' ', 'N', 'Y')).values, { true: 'Y', false: ['N', ''] }, 'a blank beside a letter reads as false but is not written')
  t.same(proposeBooleanMap(col('Gesperrt'), 'text', rows('N')), { usable: true, values: { true: 'J', false: 'N' }, notes: ['only "N" seen: "J" guessed for true; check it'] })
  t.same(proposeBooleanMap(col('Locked'), 'text', rows('N')).values, { true: 'Y', false: 'N' })
  t.same(proposeBooleanMap(col('Zablokowany'), 'text', rows('N')).values, { true: 'T', false: 'N' }, 'Polish: T/N (Tak/Nie), not Y')
  t.same(proposeBooleanMap(col('Aktywny'), 'text', rows('T')).values, { true: 'T', false: 'N' }, 'and T is paired with N, not F')
  t.same(proposeBooleanMap(col('Flag'), 'text', rows('t')).values, { true: 't', false: 'f' })
  t.same(proposeBooleanMap(col('Flag'), 'text', rows('Ja')).values, { true: 'Ja', false: 'Nein' })
  t.same(proposeBooleanMap(col('Flag'), 'text', rows('')).values, { true: 'X', false: '' })
  t.same(proposeBooleanMap(col('Flag'), 'text', rows('A', 'I')).usable, false, 'A/I is not a yes/no pair')
  const counted = (...pairs: Array<[unknown, number]>): CodeCount[] => pairs.map(([value, count]) => ({ value, count }))
  t.same(proposeBooleanMap(col('Gesperrt'), 'text', counted(['j', 5], ['J', 5], ['N', 9])).values, { true: 'J', false: 'N' }, 'a tie: the upper-case spelling is written, whichever the database listed first')
  t.same(proposeBooleanMap(col('Gesperrt'), 'text', counted([-1, 4], ['J', 4], ['N', 9], [0, 1])).values, { true: ['J', -1], false: ['N', 0] }, 'a tie in a text flag: the text code is written')
  t.same(proposeBooleanMap(col('Gesperrt'), 'text', counted(['j', 5], ['J ', 3], ['J', 3], ['N', 9])).values, { true: 'J', false: 'N' }, "'J', 'J ' and 'j' are one code, spelled as most rows spell it")
  t.same(proposeBooleanMap(col('Gesperrt'), 'text', counted([-1, 5], ['J', 3], ['j', 3], ['N', 9])).values, { true: ['J', -1], false: 'N' }, "counted as one, 'J' and 'j' outnumber -1")
  // before: {"true": ["J", "j", "X"], …} without a word, X taken for SAP's ticked mark beside the column's own J
  t.same(proposeBooleanMap(col('Gesperrt'), 'text', counted(['J', 4], ['j ', 1], ['X', 1], ['N', 9])), {
    usable: true,
    values: { true: 'J', false: 'N' },
    notes: ['codes not placed (returned as stored until mapped): "X", a ticked mark beside "J" for true; add it to "true" if the picking system means the same by it']
  }, 'X beside J/N: named, not placed')
  t.same(proposeBooleanMap(col('Gesperrt'), 'text', counted(['X', 4], ['N', 9])).values, { true: 'X', false: 'N' }, 'X as the only mark for true is placed')
  t.same(proposeBooleanMap(col('Flag'), 'text', rows()).usable, false, 'no rows, no codes to learn')
  t.same(proposeBooleanMap(col('Flag'), 'text', rows(...Array.from({ length: 21 }, (_, i) => `c${i}`))).usable, false)
  t.same(proposeBooleanMap(col('Aktiv'), 'integer', rows(1, 0)), { usable: true, notes: [] }, '0/1 needs no map')
  t.same(proposeBooleanMap(col('Aktiv'), 'integer', rows(-1, 0)).values, { true: -1, false: 0 })
  t.match(proposeBooleanMap(col('Aktiv'), 'integer', rows(1, 2)), { usable: true, values: undefined, notes: [/holds 1, 2/] })
})

t.test('station type value maps', async (t) => {
  const rows = (...values: unknown[]): CodeCount[] => values.map((value) => ({ value, count: 1 }))
  t.same(proposeStationTypeMap('text', rows('vlm', 'manual')), { usable: true, notes: [] }, 'already the API values')
  t.same(proposeStationTypeMap('text', rows('Lift', 'Karussell', 'PTL', 'Manuell', 'VLM')).values,
    { vlm: ['Lift', 'VLM'], carousel: 'Karussell', ptl: 'PTL', manual: 'Manuell' })
  t.same(proposeStationTypeMap('text', rows('Winda', 'Karuzela', 'PTL', 'Ręczne')).values,
    { vlm: 'Winda', carousel: 'Karuzela', ptl: 'PTL', manual: 'Ręczne' }, 'Polish words: a lift is a winda, manual ręczne')
  t.same(proposeStationTypeMap('integer', rows(1, 2)), { usable: true, notes: ['codes not placed (returned as stored until mapped): 1, 2', 'a number column needs a value map from these codes to vlm, carousel, ptl, manual before the gateway starts'] })
  t.same(proposeStationTypeMap('text', rows()).notes, ['no rows: no value map proposed'])
  // 'P ' another program padded is the code 'P' once: a map naming it twice is refused at start
  const padded = proposeStationTypeMap('text', rows('P', 'V', 'P ', 'X', 'X  '))
  t.same(padded.values, { ptl: 'P', vlm: 'V' })
  t.same(padded.notes, ['codes not placed (returned as stored until mapped): "X"', "no stored code for carousel, manual: with this map a station of those types cannot be created or set; add the picking system's code for each to the map"],
    'before: said nothing, and a create of a manual station under the pasted map was a 400')
  // a German vendor's K for Kommissionierung beside L (Liftsystem) and M (manuell): the guess carousel is named for checking
  const german = proposeStationTypeMap('text', rows('K', 'L', 'M'))
  t.same(german.values, { vlm: 'L', carousel: 'K', manual: 'M' })
  t.same(german.notes.at(-1), '"K" is taken for Karussell (carousel); where it stands for Kommissionierung (a picking place with pick-to-light), map it to ptl instead')
  t.notOk(proposeStationTypeMap('text', rows('K', 'P', 'L')).notes.some((n) => n.includes('Kommissionierung')), 'not where P is the pick-to-light code')
  t.doesNotThrow(() => compileValueMap('string', padded.values ?? {}), 'the proposal compiles')
  t.same(proposeBooleanMap({ name: 'Aktiv', type: 'varchar', nullable: false, hasDefault: false, identity: false, computed: false }, 'text', rows('J', 'N', 'J ')).values, { true: 'J', false: 'N' })
  t.match(proposeStationTypeMap('text', rows(...Array.from({ length: 21 }, (_, i) => `c${i}`))).notes, [/more than 20/])
})

/** Answers the statements a SQL Server would be sent, from canned rows. */
function fakeMssql (tables: Row[], columns: Record<string, ColumnInfo[]>, codes: Record<string, Row[]>): Database & { sent: Statement[] } {
  const sent: Statement[] = []
  return {
    dialect: 'mssql',
    sent,
    async query (stmt) {
      sent.push(stmt)
      if (stmt.text === listTablesStatement('mssql').text) return tables
      for (const [text, rows] of Object.entries(codes)) if (stmt.text === text) return rows
      throw new Error(`unexpected statement ${stmt.text}`)
    },
    async execute () { throw new Error('introspection never writes') },
    async transaction () { throw new Error('introspection never writes') },
    async ping () {},
    async close () {},
    changeMark () { return undefined },
    async columns (mapping) { return columns[`${mapping.schema}.${mapping.table}`] ?? [] }
  }
}

t.test('SQL Server: schemas, row counts as text, codes in a char column', async (t) => {
  const c = (name: string, type: string, extra: Partial<ColumnInfo> = {}): ColumnInfo => ({ name, type, nullable: true, hasDefault: false, identity: false, computed: false, ...extra })
  const materialBase = [
    c('MatID', 'int', { identity: true, hasDefault: true, nullable: false, precision: 10, scale: 0 }),
    c('MatNo', 'varchar', { maxLength: 40, nullable: false }),
    c('MatName', 'nvarchar', { maxLength: 80, nullable: false }),
    c('MatDesc', 'nvarchar', { maxLength: -1 }),
    c('UoM', 'varchar', { maxLength: 10 }),
    c('EAN', 'varchar', { maxLength: 20 }),
    c('ReorderPoint', 'decimal', { precision: 18, scale: 3 }),
    c('MaxQty', 'decimal', { precision: 18, scale: 3 }),
    c('GrossWeight', 'float', { precision: 53 }),
    c('Locked', 'char', { maxLength: 1, nullable: false, hasDefault: true }),
    c('LockText', 'nvarchar', { maxLength: 200 }),
    c('QtyOnHand', 'decimal', { precision: 18, scale: 3, computed: true, hasDefault: true }),
    c('Created', 'datetime', { nullable: false, hasDefault: true }),
    c('CreatedBy', 'varchar', { maxLength: 20 }),
    c('LastChange', 'datetime', { nullable: false, hasDefault: true }),
    c('rv', 'timestamp', { nullable: false, hasDefault: true })
  ]
  const lockedCodes = distinctValuesStatement('mssql', { schema: 'wms', name: 'MaterialBase', view: false }, 'Locked').text
  const db = fakeMssql(
    [
      { schema: 'archive', name: 'MaterialBase', type: 'BASE TABLE', rows: '120000' },
      { schema: 'wms', name: 'MaterialBase', type: 'BASE TABLE', rows: '5321' },
      { schema: 'wms', name: 'vMaterial', type: 'VIEW', rows: null }
    ],
    { 'wms.MaterialBase': materialBase, 'archive.MaterialBase': materialBase },
    { [lockedCodes]: [{ v: 'N', n: 5000 }, { v: 'Y', n: 321 }] }
  )
  const result = await introspect(db, { materials: { table: 'materials', columns: {} } })
  t.same(result.tables, [
    { schema: 'archive', name: 'MaterialBase', view: false, rows: 120000 },
    { schema: 'wms', name: 'MaterialBase', view: false, rows: 5321 },
    { schema: 'wms', name: 'vMaterial', view: true }
  ])
  const m = result.resources.materials
  t.same(m.mapping, {
    schema: 'wms',
    table: 'MaterialBase',
    columns: {
      id: 'MatID',
      materialNumber: 'MatNo',
      name: 'MatName',
      description: 'MatDesc',
      unit: 'UoM',
      barcode: 'EAN',
      minStock: 'ReorderPoint',
      maxStock: 'MaxQty',
      weight: 'GrossWeight',
      blocked: { column: 'Locked', values: { true: 'Y', false: 'N' } },
      blockReason: 'LockText',
      stockQuantity: 'QtyOnHand',
      createdAt: 'Created',
      modifiedAt: 'LastChange'
    }
  }, 'not the archive copy; CreatedBy is no date; the rowversion is no modifiedAt')
  t.same(m.unmatched, [])
  t.match(m.notes.join('\n'), /read as UTC; if they hold local time, add "timeZone"/)
  t.ok(db.sent.every((s) => s.params.length === 0 && !/'(N|Y)'/.test(s.text)), 'no values in the statements')
  t.match(formatReport(result).join('\n'), /\n {2}archive\.MaterialBase {2}table {2}120000 rows\n/)
})

t.test('SQL Server: a NOT NULL bytes column is not advised into "defaults", which start-up refuses for bytes', async (t) => {
  const c = (name: string, type: string, extra: Partial<ColumnInfo> = {}): ColumnInfo => ({ name, type, nullable: true, hasDefault: false, identity: false, computed: false, ...extra })
  const db = fakeMssql(
    [{ schema: 'dbo', name: 'Material', type: 'BASE TABLE', rows: '2' }],
    {
      'dbo.Material': [
        c('MatID', 'int', { identity: true, hasDefault: true, nullable: false }),
        c('MatNo', 'varchar', { maxLength: 40, nullable: false }),
        c('MatName', 'nvarchar', { maxLength: 80, nullable: false }),
        c('Bild', 'varbinary', { maxLength: -1, nullable: false }),
        c('Hash', 'binary', { maxLength: 16, nullable: false }),
        c('Kst', 'varchar', { maxLength: 4, nullable: false })
      ]
    },
    {}
  )
  const notes = (await introspect(db, {})).resources.materials.notes.filter((n) => n.includes('NOT NULL without a default'))
  t.same(notes, [
    'column \'Bild\' (varbinary(max)) is NOT NULL without a default and not mapped: inserts through the gateway would fail; map it, give it a default in the database (ALTER TABLE … ADD DEFAULT 0x FOR [Bild]), or set "readOnly": true',
    'column \'Hash\' (binary(16)) is NOT NULL without a default and not mapped: inserts through the gateway would fail; map it, give it a default in the database (ALTER TABLE … ADD DEFAULT 0x FOR [Hash]), or set "readOnly": true',
    'column \'Kst\' (varchar(4)) is NOT NULL without a default and not mapped: inserts through the gateway would fail; map it, give it a value every create writes ("defaults": {"Kst": …}), give it a default in the database, or set "readOnly": true'
  ], 'before: "defaults" advised for Bild and Hash too')
})

t.test('SQL Server: columns a field cannot use after all, and an id the gateway cannot fill', async (t) => {
  const c = (name: string, type: string, extra: Partial<ColumnInfo> = {}): ColumnInfo => ({ name, type, nullable: true, hasDefault: false, identity: false, computed: false, ...extra })
  const item = { schema: 'dbo', name: 'Item', view: false }
  const station = { schema: 'dbo', name: 'Station', view: false }
  const db = fakeMssql(
    [{ schema: 'dbo', name: 'Item', type: 'BASE TABLE', rows: '2' }, { schema: 'dbo', name: 'Station', type: 'BASE TABLE', rows: '2' }],
    {
      'dbo.Item': [c('ItemID', 'int', { identity: true, hasDefault: true, nullable: false }), c('ItemNo', 'varchar', { maxLength: 20, nullable: false }), c('Description1', 'nvarchar', { maxLength: 80 }), c('Blocked', 'varchar', { maxLength: 1, nullable: false }), c('LastChange', 'text')],
      'dbo.Station': [c('StationID', 'int', { nullable: false }), c('StationName', 'nvarchar', { maxLength: 50, nullable: false }), c('Active', 'varchar', { maxLength: -1 }), c('Typ', 'int'), c('Controller', 'int')]
    },
    {
      [distinctValuesStatement('mssql', item, 'Blocked').text]: [{ v: 'A', n: 1 }, { v: 'I', n: 1 }],
      [timeValuesStatement('mssql', item, 'LastChange', 'text').text]: [{ v: '20240101', n: 1 }, { v: '20240315', n: 1 }],
      [distinctValuesStatement('mssql', station, 'Typ').text]: [{ v: 1, n: 1 }, { v: 2, n: 1 }]
    }
  )
  const result = await introspect(db)
  const m = result.resources.materials
  t.same(mapped(m.mapping)?.columns, { id: 'ItemID', materialNumber: 'ItemNo', name: 'Description1', modifiedAt: { column: 'LastChange', format: 'yyyymmdd' } })
  t.same(m.fields.find((f) => f.field === 'modifiedAt')?.format, 'yyyymmdd', 'dates as digits in a legacy text column, read through varchar(max)')
  t.match(m.notes.join('\n'), /blocked: column 'Blocked' holds "A", "I", which do not read as true\/false/)
  t.same(m.unmappedRequired.map((col) => col.name), ['Blocked'], 'left unmapped, so an insert would miss it')
  const s = result.resources.stations
  t.same(mapped(s.mapping)?.columns, { id: 'StationID', name: 'StationName', type: 'Typ', controllerId: 'Controller' })
  t.same(s.fields.find((f) => f.field === 'controllerId')?.notes, ["the column's type (int) is a second-best fit for a string"])
  t.match(s.notes.join('\n'), /enabled: column 'Active' \(varchar\(max\)\) holds codes that cannot be read here/)
  t.match(s.notes.join('\n'), /id column 'StationID' is neither an identity column nor has a default/)
  t.notMatch(db.sent.map((st) => st.text).join('\n'), /\[Active\]/, 'a varchar(max) column is not grouped')
})

function io (env: NodeJS.ProcessEnv): Io & { stdout: string[], stderr: string[] } {
  const stdout: string[] = []
  const stderr: string[] = []
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l), readStdin: async () => '', env }
}

t.test('picking-gateway db introspect', async (t) => {
  const path = join(dir, 'cli.db')
  legacyDatabase(path, { complete: true })
  const url = `sqlite:${path}`
  const env = { DATABASE_URL: url, PICKING_GATEWAY_JWT_SECRET: SECRET }

  const json = io(env)
  t.equal(await main(['db', 'introspect', '--json'], json), 0)
  const printed = JSON.parse(json.stdout.join('\n')) as { mapping: Record<string, unknown> }
  t.same(Object.keys(printed), ['mapping'])
  t.same(Object.keys(printed.mapping), ['materials', 'stations', 'users'])
  t.same(printed.mapping.users, referenceMappings.users, "db init's user table, as it is")
  const config = validateConfig({ auth: { jwtSecret: SECRET }, database: { url }, mapping: printed.mapping })

  // the gateway's own start-up check finds nothing wrong with the proposal
  const db = openDatabase(url, { logger: silent })
  t.teardown(() => db.close())
  const reads: string[] = []
  const columns = db.columns.bind(db)
  db.columns = async (m) => { reads.push(m.table); return await columns(m) }
  t.same((await inspectStorage(db, mappingsOf(config))).problems, [])
  t.same(reads, ['Artikel', 'Arbeitsplatz', 'gateway_users'], "each table's columns are read once")

  const human = io(env)
  t.equal(await main(['db', 'introspect'], human), 0)
  const text = human.stdout.join('\n')
  t.match(text, /materials -> Artikel \(table\): name 'Artikel' ~ materials; 14 of 14 fields matched/)
  t.match(text, /stations -> Arbeitsplatz \(table\)/)
  t.match(text, /users -> gateway_users \(table\): the configured mapping names it; 10 of 10/)
  const start = human.stdout.findIndex((line) => line.startsWith('{'))
  t.ok(start > 0, 'the JSON follows the report')
  t.same(JSON.parse(human.stdout.slice(start).join('\n')), printed)

  t.equal(await main(['db', 'introspect', '--demo'], io(env)), 64)
  t.equal(await main(['db', 'init', '--json'], io(env)), 64)
  t.equal(await main(['db', 'introspect', 'extra'], io(env)), 64)
  const help = io({})
  t.equal(await main(['db', '--help'], help), 0)
  t.match(help.stdout.join('\n'), /db introspect \[--json\]/)

  const missing = io({ ...env, DATABASE_URL: `sqlite:${join(dir, 'typo.db')}` })
  t.equal(await main(['db', 'introspect'], missing), 78, 'a mistyped path is not an empty database: a configuration error')
  t.match(missing.stderr.join(), /typo\.db' does not exist/)
})

t.test('German parts and pick-place tables: Teile, Kommissionierplätze', async (t) => {
  const path = join(dir, 'teile.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE Teile (TeilID INTEGER PRIMARY KEY, TeileNr VARCHAR(20) NOT NULL, Bezeichnung VARCHAR(60) NOT NULL);
    CREATE TABLE Lagerplaetze (LpID INTEGER PRIMARY KEY, LpName VARCHAR(20) NOT NULL);
    CREATE TABLE "Kommissionierplätze" (PlatzID INTEGER PRIMARY KEY, Bezeichnung VARCHAR(20) NOT NULL, Typ CHAR(1));
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  t.equal(found.resources.materials.table?.name, 'Teile')
  t.equal(found.resources.stations.table?.name, 'Kommissionierplätze', 'the pick places, not the storage places')
})

t.test('Italian names as a modern SQLite schema writes them: a table "Anagrafica", "Creato il", "Modificato il", a station\'s "Attiva", "Creata", "Modificata"', async (t) => {
  const path = join(dir, 'magazzino.db')
  const raw = new BetterSqlite3(path)
  raw.exec(`
    CREATE TABLE "Anagrafica" ("Id" INTEGER PRIMARY KEY AUTOINCREMENT, "Codice" TEXT NOT NULL UNIQUE, "Descrizione Breve" TEXT NOT NULL, "UM" TEXT NOT NULL DEFAULT 'PZ',
      "Giacenza" INTEGER NOT NULL DEFAULT 0, "Impegnato" INTEGER NOT NULL DEFAULT 0, "Disponibile" INTEGER GENERATED ALWAYS AS ("Giacenza" - "Impegnato") STORED,
      "Creato il" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), "Modificato il" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))) STRICT;
    CREATE TABLE "Postazioni" ("Numero" REAL PRIMARY KEY, "Nome Postazione" TEXT NOT NULL UNIQUE, "Tipo" TEXT NOT NULL, "Attiva" TEXT NOT NULL DEFAULT 'S',
      "Creata" TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), "Modificata" TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
    INSERT INTO "Anagrafica" ("Codice", "Descrizione Breve") VALUES ('CAF-001', 'Caffè'), ('TE-002', 'Tè');
    INSERT INTO "Postazioni" ("Numero", "Nome Postazione", "Tipo", "Attiva") VALUES (1.0, 'Verticale Nord', 'V', 'S'), (2.0, 'Banco È', 'M', 'N');
  `)
  raw.close()
  const db = openDatabase(`sqlite:${path}`, { logger: silent })
  t.teardown(() => db.close())
  const found = await introspect(db, {})
  // before: no table for materials ('Anagrafica'), and the stations' times and enabled had no column
  t.match(mapped(found.resources.materials.mapping)?.columns, { id: 'Id', materialNumber: 'Codice', stockQuantity: 'Giacenza', createdAt: 'Creato il', modifiedAt: 'Modificato il' })
  t.match(mapped(found.resources.stations.mapping)?.columns, { name: 'Nome Postazione', createdAt: 'Creata', modifiedAt: 'Modificata', enabled: { column: 'Attiva', values: { true: 'S', false: 'N' } } })
})
