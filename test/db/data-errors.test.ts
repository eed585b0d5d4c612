// Driver errors about the data: SQL Server ones as node-mssql builds them, SQLite ones from a real database, and their API wording.
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import sql from 'mssql'
import t from 'tap'
import { type DataFault, type FaultContext, checkExpression, faultToError, mssqlDataFault, namesIn, sqliteDataFault } from '../../src/db/data-errors.js'
import { tempDir } from '../helpers/temp.js'
import {
  ConstraintViolationError, DataFaultError, DbError, InvalidValueError, ReferencedError
} from '../../src/db/errors.js'

/** a server error as node-mssql's tedious driver wraps it (lib/tedious/request.js handleError) */
function serverError (number: number, message: string, severity = 16): sql.RequestError {
  const raw = Object.assign(new Error(message), {
    info: { number, state: 1, class: severity, message, serverName: 'SQL01', procName: '', lineNumber: 1 }
  })
  return new sql.RequestError(raw, 'EREQUEST')
}

/** a batch that raised several errors: node-mssql throws the last with the others in precedingErrors */
function batch (...errors: sql.RequestError[]): sql.RequestError {
  const last = errors[errors.length - 1]
  return Object.assign(last, { precedingErrors: errors.slice(0, -1) })
}

const FK_DELETE = 'The DELETE statement conflicted with the REFERENCE constraint "FK_Bin_Material". The conflict occurred in database "Picking", table "dbo.Bin", column \'MatID\'.'
const FK_INSERT = 'The INSERT statement conflicted with the FOREIGN KEY constraint "FK_Artikel_Lager". The conflict occurred in database "Picking", table "wms.Lager", column \'LagerID\'.'
const NOT_NULL = "Cannot insert the value NULL into column 'Zone', table 'Picking.wms.Artikel'; column does not allow nulls. INSERT fails."
const TRUNCATED = "String or binary data would be truncated in table 'Picking.wms.Artikel', column 'ArtNr'. Truncated value: 'M-10000000'."
const TRIGGER_ENDED = 'The transaction ended in the trigger. The batch has been aborted.'

t.test('mssqlDataFault: constraint 547 in its three kinds', async (t) => {
  const cases: Array<[string, DataFault]> = [
    [FK_DELETE, { kind: 'referenced' }],
    ['The UPDATE statement conflicted with the REFERENCE constraint "FK_Bin_Material". The conflict occurred in database "Picking", table "dbo.Bin", column \'MatID\'.', { kind: 'referenced' }],
    ['The DELETE statement conflicted with the SAME TABLE REFERENCE constraint "FK_Lager_Parent". The conflict occurred in database "Picking", table "wms.Lager", column \'ParentID\'.', { kind: 'referenced' }],
    // a foreign key's message names the parent's column, not the child's: the constraint's name, whose columns the catalog gives
    [FK_INSERT, { kind: 'foreignKey', constraint: 'FK_Artikel_Lager' }],
    ['The UPDATE statement conflicted with the FOREIGN KEY constraint "FK_Artikel_Lager". The conflict occurred in database "Picking", table "wms.Lager", column \'LagerID\'.', { kind: 'foreignKey', constraint: 'FK_Artikel_Lager' }],
    ['The INSERT statement conflicted with the FOREIGN KEY SAME TABLE constraint "FK_Lager_Parent". The conflict occurred in database "Picking", table "wms.Lager", column \'LagerID\'.', { kind: 'foreignKey', constraint: 'FK_Lager_Parent' }],
    ['The INSERT statement conflicted with the CHECK constraint "CK_Artikel_Gewicht". The conflict occurred in database "Picking", table "wms.Artikel", column \'Gewicht\'.', { kind: 'check', columns: ['Gewicht'] }],
    // a constraint over several columns names none
    ['The UPDATE statement conflicted with the CHECK constraint "CK_Artikel_MaxBestand". The conflict occurred in database "Picking", table "wms.Artikel".', { kind: 'check' }],
    // a German server: the constraint keywords stay English
    ['Die DELETE-Anweisung steht in Konflikt mit der REFERENCE-Einschränkung "FK_Bin_Material". Der Konflikt trat in der Picking-Datenbank, Tabelle "dbo.Bin", column \'MatID\' auf.', { kind: 'referenced' }],
    ['Die INSERT-Anweisung steht in Konflikt mit der FOREIGN KEY-Einschränkung "FK_Artikel_Lager". Der Konflikt trat in der Picking-Datenbank, Tabelle "wms.Lager", column \'LagerID\' auf.', { kind: 'foreignKey', constraint: 'FK_Artikel_Lager' }],
    ['Die UPDATE-Anweisung steht in Konflikt mit der CHECK-Einschränkung "CK_Artikel_Gewicht".', { kind: 'check' }],
    // unrecognisable text: a DELETE can only have hit a reference
    ['DELETE x', { kind: 'referenced' }],
    ['INSERT x', { kind: 'check' }]
  ]
  for (const [message, fault] of cases) t.same(mssqlDataFault(serverError(547, message)), fault, message)
})

t.test('mssqlDataFault: a legacy rule (513) is refused as a CHECK constraint is', async (t) => {
  // CREATE RULE r_pos AS @v >= 0; sp_bindrule 'r_pos', 'wms.Artikel.Gewicht' (or bound to the column's alias type); the 3621 follows
  const RULE = "A column insert or update conflicts with a rule imposed by a previous CREATE RULE statement. The statement was terminated. The conflict occurred in database 'Picking', table 'wms.Artikel', column 'Gewicht'."
  const ended = serverError(3621, 'The statement has been terminated.', 0)
  t.same(mssqlDataFault(batch(serverError(513, RULE), ended)), { kind: 'check', columns: ['Gewicht'], checkedBy: 'rule', table: 'wms.Artikel' }, 'before: undefined, a 500')
  t.same(mssqlDataFault(serverError(513, "Une insertion ou une mise à jour de colonne est en conflit avec une règle imposée par une instruction CREATE RULE antérieure. L'instruction a été arrêtée. Le conflit s'est produit dans la base de données 'Picking', table 'wms.Artikel', colonne 'Gewicht'.")),
    { kind: 'check', columns: ['Gewicht'], checkedBy: 'rule', table: 'wms.Artikel' }, 'the column is the last name quoted, in any language')
  t.same(mssqlDataFault(serverError(513, 'A column insert or update conflicts with a rule.')), { kind: 'check', checkedBy: 'rule' }, 'no column when none is quoted')
  const err = faultToError(mssqlDataFault(batch(serverError(513, RULE), ended))!, { noun: 'material', operation: 'create', fieldOf: (column) => column === 'Gewicht' ? 'weight' : undefined })
  t.type(err, ConstraintViolationError)
  t.equal(err.statusCode, 400)
  t.equal(err.message, "The picking system's database refused the value of 'weight' (a rule bound to a column of its table)")
})

t.test('mssqlDataFault: columns, lengths, ranges, conversions', async (t) => {
  t.same(mssqlDataFault(serverError(515, NOT_NULL)), { kind: 'notNull', column: 'Zone', table: 'Picking.wms.Artikel' })
  t.same(mssqlDataFault(serverError(515, "Cannot insert the value NULL into column 'Bezeichnung', table 'Picking.wms.Artikel'; column does not allow nulls. UPDATE fails.")),
    { kind: 'notNull', column: 'Bezeichnung', table: 'Picking.wms.Artikel' })
  t.same(mssqlDataFault(serverError(515, 'Cannot insert the value NULL.')), { kind: 'notNull' }, 'no column when none is quoted')
  // before: the apostrophe of d'insérer opened the first quote, and the column was 'insérer la valeur NULL dans la colonne '
  t.same(mssqlDataFault(serverError(515, "Impossible d'insérer la valeur NULL dans la colonne 'Zone', table 'Picking.wms.Artikel'. Cette colonne n'accepte pas les valeurs NULL. Échec de INSERT.")),
    { kind: 'notNull', column: 'Zone', table: 'Picking.wms.Artikel' }, 'an apostrophe inside a word is no quote')
  t.same(mssqlDataFault(serverError(2628, "Les données de chaîne ou binaires seraient tronquées dans la table 'Picking.wms.Artikel', colonne 'ArtNr'. Valeur tronquée : 'M-1'.")),
    { kind: 'truncation', column: 'ArtNr', table: 'Picking.wms.Artikel' })
  t.same(mssqlDataFault(serverError(2628, TRUNCATED)), { kind: 'truncation', column: 'ArtNr', table: 'Picking.wms.Artikel' })
  t.same(mssqlDataFault(serverError(8152, 'String or binary data would be truncated.')), { kind: 'truncation' })
  const overflow: Array<[number, string]> = [
    [8115, 'Arithmetic overflow error converting numeric to data type numeric.'],
    [220, 'Arithmetic overflow error for data type smallint, value = 70000.'],
    [232, 'Arithmetic overflow error for type int, value = 3000000000.000000.'],
    [517, "Adding a value to a 'datetime' column caused an overflow."],
    [8134, 'Divide by zero error encountered.']
  ]
  for (const [number, message] of overflow) t.same(mssqlDataFault(serverError(number, message)), { kind: 'overflow' }, String(number))
  const conversion: Array<[number, string]> = [
    [241, 'Conversion failed when converting date and/or time from character string.'],
    [242, 'The conversion of a varchar data type to a datetime data type resulted in an out-of-range value.'],
    [245, "Conversion failed when converting the nvarchar value 'abc' to data type int."],
    [8114, 'Error converting data type nvarchar to numeric.'],
    [295, 'Conversion failed when converting character string to smalldatetime data type.'],
    [8169, 'Conversion failed when converting from a character string to uniqueidentifier.'],
    [8023, 'The incoming tabular data stream (TDS) remote procedure call (RPC) protocol stream is incorrect. Parameter 3 ("@p2"): The supplied value is not a valid instance of data type float.'],
    [296, 'The conversion of char data type to smalldatetime data type resulted in an out-of-range value.']
  ]
  for (const [number, message] of conversion) t.same(mssqlDataFault(serverError(number, message)), { kind: 'conversion' }, String(number))
})

t.test('mssqlDataFault: triggers and the picking system refusing', async (t) => {
  t.same(mssqlDataFault(batch(serverError(50000, '  Lagerplatz gesperrt: Inventur läuft '), serverError(3609, TRIGGER_ENDED))),
    { kind: 'rejected', message: 'Lagerplatz gesperrt: Inventur läuft' }, 'RAISERROR then 3609: the trigger\'s text')
  t.same(mssqlDataFault(serverError(51000, 'Material ist in Kommissionierung und kann nicht gelöscht werden.')),
    { kind: 'rejected', message: 'Material ist in Kommissionierung und kann nicht gelöscht werden.' }, 'THROW with its own number')
  t.same(mssqlDataFault(serverError(3609, TRIGGER_ENDED)), { kind: 'rejected' }, 'a bare ROLLBACK in a trigger')
  t.same(mssqlDataFault(batch(serverError(50000, '  '), serverError(3609, TRIGGER_ENDED))), { kind: 'rejected' }, 'an empty RAISERROR says nothing')
  t.same(mssqlDataFault(batch(serverError(547, FK_DELETE), serverError(3609, TRIGGER_ENDED))), { kind: 'referenced' },
    'a constraint says more than the 3609 after it')
  t.same(mssqlDataFault(batch(serverError(3609, TRIGGER_ENDED), serverError(8152, 'String or binary data would be truncated.'))), { kind: 'truncation' },
    'whatever the order')
  t.same(mssqlDataFault(batch(serverError(547, FK_INSERT), serverError(50001, 'Artikel unbekannt'))), { kind: 'rejected', message: 'Artikel unbekannt' },
    'the trigger\'s own text beats a constraint')
  t.same(mssqlDataFault(batch(serverError(515, NOT_NULL), serverError(547, FK_INSERT))), { kind: 'notNull', column: 'Zone', table: 'Picking.wms.Artikel' },
    'of equal worth, the first: it is the cause')
})

t.test('mssqlDataFault: a write through a view WITH CHECK OPTION that the view would no longer show (550)', async (t) => {
  // CREATE VIEW wms.v_PlatzLager1 AS SELECT … FROM wms.Platz WHERE Lager = 1 WITH CHECK OPTION; a station moved to warehouse 2
  const OPTION = 'The attempted insert or update failed because the target view either specifies WITH CHECK OPTION or spans a view that specifies WITH CHECK OPTION and one or more rows resulting from the operation did not qualify under the CHECK OPTION constraint.'
  const fault = mssqlDataFault(batch(serverError(550, OPTION), serverError(3621, 'The statement has been terminated.', 0)))
  t.same(fault, { kind: 'check', checkedBy: 'view' }, 'before: undefined, a 500')
  const err = faultToError(fault!, { noun: 'station', operation: 'update', id: 4, fieldOf: () => undefined })
  t.type(err, ConstraintViolationError)
  t.equal(err.statusCode, 400)
  t.equal(err.message, "The picking system's database refused the values (the WITH CHECK OPTION of the view the gateway writes through: the station would no longer be one the view shows)")
})

t.test('mssqlDataFault: a trigger\'s words raised below severity 11 before its ROLLBACK (information, not an error)', async (t) => {
  // RAISERROR('Lagerplatz gesperrt', 10, 1); ROLLBACK: the client gets the text as an info message and the 3609 as the error
  const said = (err: sql.RequestError, ...messages: Array<[number, string]>): sql.RequestError =>
    Object.defineProperty(err, 'raisedInfo', { value: messages.map(([number, message]) => ({ number, message })) })
  t.same(mssqlDataFault(said(serverError(3609, TRIGGER_ENDED), [50000, '  '], [50000, ' Lagerplatz gesperrt: Inventur läuft '])),
    { kind: 'rejected', message: 'Lagerplatz gesperrt: Inventur läuft' }, 'before: no message, "(a trigger rolled it back)"')
  t.same(mssqlDataFault(said(batch(serverError(50000, 'Artikel unbekannt'), serverError(3609, TRIGGER_ENDED)), [50000, 'nur ein Hinweis'])),
    { kind: 'rejected', message: 'Artikel unbekannt' }, 'an error\'s text comes first')
  t.same(mssqlDataFault(said(batch(serverError(547, FK_INSERT), serverError(3609, TRIGGER_ENDED)), [50000, 'Hinweis'])),
    { kind: 'foreignKey', constraint: 'FK_Artikel_Lager' }, 'a constraint says more than a note')
  const aborted = new sql.TransactionError('Transaction has been aborted.', 'EABORT')
  Object.defineProperty(aborted, 'originalError', { enumerable: true, value: said(serverError(3609, TRIGGER_ENDED), [50000, 'Inventur']) })
  t.same(mssqlDataFault(aborted), { kind: 'rejected', message: 'Inventur' }, 'inside an aborted transaction too')
})

t.test('mssqlDataFault: unwraps an aborted transaction', async (t) => {
  const aborted = new sql.TransactionError('Transaction has been aborted.', 'EABORT')
  Object.defineProperty(aborted, 'originalError', { enumerable: true, value: serverError(547, FK_DELETE) })
  t.same(mssqlDataFault(aborted), { kind: 'referenced' })
  t.equal(mssqlDataFault(new sql.TransactionError('Transaction has been aborted.', 'EABORT')), undefined, 'no reason recorded')
})

t.test('mssqlDataFault: leaves everything else alone', async (t) => {
  const others: unknown[] = [
    serverError(2627, "Violation of UNIQUE KEY constraint 'UX_Artikel_ArtNr'. Cannot insert duplicate key in object 'wms.Artikel'. The duplicate key value is (M-1)."),
    serverError(2601, "Cannot insert duplicate key row in object 'wms.Artikel' with unique index 'UX_Artikel_ArtNr'. The duplicate key value is (M-1)."),
    serverError(1205, 'Transaction (Process ID 52) was deadlocked on lock resources with another process and has been chosen as the deadlock victim. Rerun the transaction.', 13),
    serverError(208, "Invalid object name 'wms.Artikel'."),
    new sql.RequestError('Timeout: Request failed to complete in 15000ms', 'ETIMEOUT'),
    new sql.ConnectionError('Failed to connect to db:1433 - Could not connect (sequence)', 'ESOCKET'),
    Object.assign(new Error(NOT_NULL), { number: 515 }), // not from node-mssql
    Object.assign(batch(serverError(208, "Invalid object name 'x'.")), { precedingErrors: [null, 'text'] }),
    undefined, null, 'error', 547
  ]
  for (const err of others) t.equal(mssqlDataFault(err), undefined, String((err as Error | null)?.message ?? err))
})

t.test('sqliteDataFault from a real database', async (t) => {
  const dir = tempDir(t, 'pg-faults-')
  const db = new BetterSqlite3(join(dir, 'faults.db'))
  t.teardown(() => db.close())
  db.pragma('foreign_keys = ON')
  db.exec(`
    CREATE TABLE Lager (LagerID INTEGER PRIMARY KEY, Name TEXT NOT NULL UNIQUE);
    CREATE TABLE Artikel (ArtID INTEGER PRIMARY KEY, ArtNr TEXT NOT NULL, Gewicht REAL CHECK (Gewicht >= 0),
      LagerID INTEGER REFERENCES Lager (LagerID));
    CREATE TABLE Zaehlung (Menge INTEGER NOT NULL) STRICT;
    CREATE TABLE Fach (FachID INTEGER PRIMARY KEY, LagerID INTEGER REFERENCES Lager (LagerID) ON DELETE RESTRICT);
    CREATE TRIGGER Artikel_gesperrt BEFORE UPDATE ON Artikel WHEN NEW.LagerID = 2
      BEGIN SELECT RAISE(ABORT, 'Lagerplatz gesperrt'); END;
    CREATE TRIGGER Artikel_still BEFORE DELETE ON Artikel WHEN OLD.ArtNr = 'still'
      BEGIN SELECT RAISE(ABORT, ''); END;
    INSERT INTO Lager (LagerID, Name) VALUES (1, 'A-01'), (2, 'B-01'), (3, 'C-01');
    INSERT INTO Fach (FachID, LagerID) VALUES (1, 3);
    INSERT INTO Artikel (ArtID, ArtNr, Gewicht, LagerID) VALUES (1, 'M-1', 1.5, 1), (2, 'still', 1, NULL);
  `)
  const fault = (text: string, ...params: unknown[]): { code: unknown, fault: DataFault | undefined } => {
    try {
      db.prepare(text).run(...params)
    } catch (err) {
      return { code: (err as { code?: unknown }).code, fault: sqliteDataFault(err) }
    }
    throw new Error(`no error from ${text}`)
  }
  t.same(fault('INSERT INTO Artikel (ArtNr, LagerID) VALUES (?, ?)', 'M-2', 99), { code: 'SQLITE_CONSTRAINT_FOREIGNKEY', fault: { kind: 'foreignKey' } })
  t.same(fault('DELETE FROM Lager WHERE LagerID = 1'), { code: 'SQLITE_CONSTRAINT_FOREIGNKEY', fault: { kind: 'foreignKey' } },
    'a delete too: SQLite does not tell the direction')
  t.same(fault('DELETE FROM Lager WHERE LagerID = 3'), { code: 'SQLITE_CONSTRAINT_TRIGGER', fault: { kind: 'foreignKey' } },
    'ON DELETE RESTRICT reports through the trigger code, and is a foreign key all the same')
  t.same(fault('INSERT INTO Artikel (ArtNr) VALUES (NULL)'), { code: 'SQLITE_CONSTRAINT_NOTNULL', fault: { kind: 'notNull', column: 'ArtNr', table: 'Artikel' } })
  t.same(fault('INSERT INTO Artikel (ArtNr, Gewicht) VALUES (?, ?)', 'M-3', -1), { code: 'SQLITE_CONSTRAINT_CHECK', fault: { kind: 'check', constraint: 'Gewicht >= 0' } }, 'an unnamed CHECK: SQLite gives its expression')
  t.same(fault('UPDATE Artikel SET LagerID = 2 WHERE ArtID = 1'),
    { code: 'SQLITE_CONSTRAINT_TRIGGER', fault: { kind: 'rejected', message: 'Lagerplatz gesperrt' } })
  t.same(fault("DELETE FROM Artikel WHERE ArtNr = 'still'"), { code: 'SQLITE_CONSTRAINT_TRIGGER', fault: { kind: 'rejected' } }, 'RAISE with no text')
  t.same(fault('INSERT INTO Artikel (ArtID, ArtNr) VALUES (?, ?)', 'x', 'M-4'), { code: 'SQLITE_MISMATCH', fault: { kind: 'conversion' } })
  t.same(fault('INSERT INTO Zaehlung (Menge) VALUES (?)', 'viele'), { code: 'SQLITE_CONSTRAINT_DATATYPE', fault: { kind: 'conversion', column: 'Menge' } })
  t.same(fault('INSERT INTO Artikel (ArtNr) VALUES (zeroblob(2000000000))'), { code: 'SQLITE_TOOBIG', fault: { kind: 'truncation' } })
  // mapSqliteError's, not a data fault
  t.same(fault('INSERT INTO Lager (Name) VALUES (?)', 'A-01'), { code: 'SQLITE_CONSTRAINT_UNIQUE', fault: undefined })
  t.same(fault('INSERT INTO Lager (LagerID, Name) VALUES (1, ?)', 'D-01'), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY', fault: undefined })
  t.throws(() => db.prepare('SELEKT 1'))
  t.equal(sqliteDataFault(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })), undefined)
  t.equal(sqliteDataFault(new Error('plain')), undefined)
  t.equal(sqliteDataFault(null), undefined)
  t.equal(sqliteDataFault('SQLITE_CONSTRAINT_NOTNULL'), undefined)
  t.same(sqliteDataFault({ code: 'SQLITE_CONSTRAINT_NOTNULL' }), { kind: 'notNull' }, 'no message, no column')
})

const columns: Record<string, string> = { matno: 'materialNumber', uom: 'unit', artnr: 'materialNumber' }
const ctx = (operation: FaultContext['operation'], id?: number, referencedBy?: string): FaultContext =>
  ({ noun: 'material', operation, id, referencedBy, fieldOf: (column) => columns[column.toLowerCase()] })

t.test('faultToError: status, code and wording of every kind', async (t) => {
  const cases: Array<[DataFault, FaultContext, new (...args: never[]) => DbError, number, string, string]> = [
    [{ kind: 'referenced' }, ctx('delete', 5, 'bins or stock'), ReferencedError, 409, 'REFERENCED',
      'Material 5 is still referenced by other records of the picking system (for example bins or stock) and cannot be deleted'],
    [{ kind: 'foreignKey' }, ctx('delete', 5), ReferencedError, 409, 'REFERENCED',
      'Material 5 is still referenced by other records of the picking system and cannot be deleted'],
    [{ kind: 'referenced' }, ctx('update', 7), ReferencedError, 409, 'REFERENCED',
      'Material 7 is still referenced by other records of the picking system and cannot be changed this way'],
    [{ kind: 'referenced' }, ctx('delete'), ReferencedError, 409, 'REFERENCED',
      'The material is still referenced by other records of the picking system and cannot be deleted'],
    [{ kind: 'foreignKey' }, ctx('create'), ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION',
      'A value refers to a record that does not exist in the picking system'],
    [{ kind: 'foreignKey' }, ctx('update', 5), ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION',
      'A value refers to a record that does not exist in the picking system'],
    [{ kind: 'foreignKey', columns: ['UoM', 'Lager'] }, ctx('create'), ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION',
      "'unit' refers to a record that does not exist in the picking system"],
    [{ kind: 'foreignKey', columns: ['UoM', 'MatNo'] }, ctx('update', 5), ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION',
      "One of 'unit', 'materialNumber' refers to a record that does not exist in the picking system"],
    [{ kind: 'notNull', column: 'UoM' }, ctx('create'), InvalidValueError, 400, 'VALIDATION_ERROR',
      "Field 'unit' must have a value: the database does not allow it to be empty"],
    [{ kind: 'notNull', column: 'Zone' }, ctx('create'), InvalidValueError, 400, 'VALIDATION_ERROR',
      "The picking system's table requires a value the gateway's mapping does not supply (a NOT NULL column without a default); map that column or give it a default"],
    [{ kind: 'notNull' }, ctx('update', 5), InvalidValueError, 400, 'VALIDATION_ERROR',
      "The picking system's table requires a value the gateway's mapping does not supply (a NOT NULL column without a default); map that column or give it a default"],
    [{ kind: 'check' }, ctx('create'), ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION',
      "The picking system's database refused the values (a CHECK constraint of its table)"],
    [{ kind: 'check', columns: ['uom'] }, ctx('create'), ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION',
      "The picking system's database refused the value of 'unit' (a CHECK constraint of its table)"],
    [{ kind: 'check', columns: ['UoM', 'AND', 'Zone', 'UOM'] }, ctx('update', 5), ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION',
      "The picking system's database refused the value of 'unit' (a CHECK constraint of its table)"],
    [{ kind: 'truncation', column: 'ArtNr' }, ctx('create'), InvalidValueError, 400, 'VALIDATION_ERROR',
      "Field 'materialNumber' is too long for the database column"],
    [{ kind: 'truncation', column: 'Kurztext' }, ctx('create'), InvalidValueError, 400, 'VALIDATION_ERROR',
      'A value is too long for the database column'],
    [{ kind: 'truncation' }, ctx('update', 5), InvalidValueError, 400, 'VALIDATION_ERROR',
      'A value is too long for the database column'],
    [{ kind: 'overflow' }, ctx('create'), InvalidValueError, 400, 'VALIDATION_ERROR',
      'A value is outside what the database column can hold'],
    [{ kind: 'conversion' }, ctx('update', 5), InvalidValueError, 400, 'VALIDATION_ERROR',
      'A value is outside what the database column can hold'],
    [{ kind: 'conversion', column: 'UOM' }, ctx('create'), InvalidValueError, 400, 'VALIDATION_ERROR',
      "Field 'unit' has a value outside what the database column can hold"],
    [{ kind: 'rejected', message: ' Lagerplatz\n  gesperrt ' }, ctx('update', 5), ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION',
      'The picking system refused the change: Lagerplatz gesperrt'],
    [{ kind: 'rejected' }, ctx('delete', 5), ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION',
      'The picking system refused the change (a trigger rolled it back)']
  ]
  for (const [fault, context, cls, status, code, message] of cases) {
    const err = faultToError(fault, context)
    const label = `${fault.kind} on ${context.operation}`
    t.type(err, cls, label)
    t.equal(err.statusCode, status, label)
    t.equal(err.code, code, label)
    t.equal(err.message, message, label)
    t.equal(err.name, cls.name, label)
  }
})

t.test('CHECK constraints: the names in an expression, a named constraint\'s expression in SQLite\'s CREATE TABLE', async (t) => {
  t.same(namesIn('"Gewicht" <= 5000 AND [Menge (kg)] > 0 OR `a``b` IN (\'x\', \'it\'\'s\') OR Größe IS NULL OR "x""y" = 1'), ['Gewicht', 'AND', 'Menge (kg)', 'OR', 'a`b', 'IN', 'OR', 'Größe', 'IS', 'NULL', 'OR', 'x"y'])
  const ddl = `CREATE TABLE "Artikel" (
  "Gewicht" DECIMAL(10,3) CONSTRAINT "CK_Artikel_Gewicht" CHECK ("Gewicht" IS NULL OR ("Gewicht" >= 0 AND "Gewicht" <= 5000)),
  "ME" TEXT,
  CONSTRAINT [CK_ME] CHECK (ME IN ('ST', ')')),
  constraint ck_plain check (length(ME) < 5)
)`
  t.equal(checkExpression(ddl, 'CK_Artikel_Gewicht'), '"Gewicht" IS NULL OR ("Gewicht" >= 0 AND "Gewicht" <= 5000)')
  t.equal(checkExpression(ddl, 'CK_ME'), "ME IN ('ST', ')')", 'a parenthesis in quotes does not end it')
  t.equal(checkExpression(ddl, 'CK_PLAIN'), 'length(ME) < 5', 'case-insensitive, unquoted')
  t.equal(checkExpression(ddl, 'CK_Artikel'), undefined, 'a prefix of a name is not the name')
  t.equal(checkExpression(ddl, 'CK.*'), undefined, 'the name is no pattern')
  t.same(sqliteDataFault({ code: 'SQLITE_CONSTRAINT_CHECK', message: 'CHECK constraint failed: CK_Artikel_Gewicht' }), { kind: 'check', constraint: 'CK_Artikel_Gewicht' })
  t.same(sqliteDataFault({ code: 'SQLITE_CONSTRAINT_CHECK', message: 'CHECK constraint failed: adresse BETWEEN 1 AND 999' }), { kind: 'check', constraint: 'adresse BETWEEN 1 AND 999' })
  t.same(sqliteDataFault({ code: 'SQLITE_CONSTRAINT_CHECK', message: 'CHECK constraint failed' }), { kind: 'check' })
})

t.test('faultToError: a long trigger text is capped at 300 characters', async (t) => {
  const long = '🔒' + 'x'.repeat(400)
  const message = faultToError({ kind: 'rejected', message: long }, ctx('update', 1)).message
  const text = message.slice('The picking system refused the change: '.length)
  t.equal(Array.from(text).length, 300)
  t.ok(text.startsWith('🔒x'), 'not split inside a character')
  t.ok(text.endsWith('x…'))
  const exact = 'y'.repeat(300)
  t.equal(faultToError({ kind: 'rejected', message: exact }, ctx('update', 1)).message, `The picking system refused the change: ${exact}`, '300 is kept whole')
})

t.test('faultToError: keeps the driver error as cause', async (t) => {
  const driver = serverError(547, FK_DELETE)
  const err = faultToError({ kind: 'referenced' }, ctx('delete', 5), { cause: driver })
  t.equal(err.cause, driver)
})

t.test('from driver error to API error, no database name leaks', async (t) => {
  const leaks = /Picking\.|wms|dbo|Artikel|Lager\b|Bin\b|FK_|CK_|MatID|LagerID|Zone|ArtNr|MaterialBase|MatNo/
  const mssql: Array<[unknown, FaultContext]> = [
    [serverError(547, FK_DELETE), ctx('delete', 5)],
    [serverError(547, FK_INSERT), ctx('create')],
    [serverError(515, NOT_NULL), ctx('create')],
    [serverError(2628, TRUNCATED), ctx('create')],
    [serverError(547, 'The INSERT statement conflicted with the CHECK constraint "CK_Artikel_Gewicht". The conflict occurred in database "Picking", table "wms.Artikel", column \'Gewicht\'.'), ctx('create')],
    [serverError(3609, TRIGGER_ENDED), ctx('update', 1)],
    [serverError(8115, 'Arithmetic overflow error converting numeric to data type numeric.'), ctx('update', 1)]
  ]
  for (const [driver, context] of mssql) {
    const fault = mssqlDataFault(driver)
    if (fault === undefined) { t.fail(String((driver as Error).message)); continue }
    const err = faultToError(fault, context)
    t.notMatch(err.message, leaks, err.message)
    t.ok(err.statusCode >= 400 && err.statusCode < 500)
  }
  const sqliteNotNull = sqliteDataFault({ code: 'SQLITE_CONSTRAINT_NOTNULL', message: 'NOT NULL constraint failed: MaterialBase.MatNo' })
  t.same(sqliteNotNull, { kind: 'notNull', column: 'MatNo', table: 'MaterialBase' }, 'the table too: a trigger may have written another one')
  t.equal(faultToError(sqliteNotNull as DataFault, ctx('create')).message, "Field 'materialNumber' must have a value: the database does not allow it to be empty")
})

t.test('the error classes', async (t) => {
  const cause = new Error('driver')
  for (const [Cls, status, code] of [[ReferencedError, 409, 'REFERENCED'], [ConstraintViolationError, 400, 'CONSTRAINT_VIOLATION'], [InvalidValueError, 400, 'VALIDATION_ERROR']] as const) {
    const err = new Cls('the message', { cause })
    t.type(err, DbError)
    t.match(err, { statusCode: status, code, message: 'the message', name: Cls.name, cause })
  }
  const fault: DataFault = { kind: 'notNull', column: 'Zone' }
  const err = new DataFaultError(fault, { cause })
  t.type(err, DbError)
  t.match(err, { statusCode: 400, code: 'CONSTRAINT_VIOLATION', message: 'The database refused the values', name: 'DataFaultError', cause })
  t.equal(err.fault, fault)
  t.equal(new DataFaultError({ kind: 'check' }).cause, undefined)
})
