// `db introspect`: reads an existing database's tables and columns and proposes each resource's mapping block.
import { Value } from '@sinclair/typebox/value'
import { TableMappingConfig } from '../../schemas/config.js'
import { dialectFor } from './dialect.js'
import { canBeAbsent, referenceMappings, resources, type ResourceName } from './resources.js'
import { categoryOf, compactTime, describeType, isJulianDay, kindFit, sqliteNumericTime, type Category, type Fit } from './storage.js'
import { holdsBytes, type ColumnInfo, type Database, type DialectName, type Row, type Statement, type StoredCode, type TableMapping, type TimeFormat, type ValueMap } from './types.js'

export interface TableInfo {
  /** SQL Server schema; undefined on SQLite */
  schema?: string
  name: string
  view: boolean
  /** where the database tells it cheaply: SQL Server's partition statistics, SQLite's COUNT(*) of tables */
  rows?: number
}

/** A distinct stored value and how many rows hold it. */
export interface CodeCount { value: unknown, count: number }

export interface FieldMatch {
  field: string
  column: ColumnInfo
  /** which naming rule chose the column */
  reason: string
  values?: ValueMap
  /** a date-time field kept as Unix time or digits: the format its values show */
  format?: TimeFormat
  notes: string[]
}

export interface ResourceProposal {
  resource: ResourceName
  /** undefined when no table fits */
  table?: TableInfo
  /** why this table, or why none */
  why: string
  fields: FieldMatch[]
  /** API fields without a column: left out of the mapping */
  unmatched: string[]
  /** NOT NULL columns without a default that no field maps: an insert through the gateway would miss them */
  unmappedRequired: ColumnInfo[]
  notes: string[]
  /** the block for the configuration file; undefined when no table fits */
  mapping?: TableMappingConfig
}

export interface Introspection {
  dialect: DialectName
  tables: TableInfo[]
  resources: Record<ResourceName, ResourceProposal>
}

/** More distinct codes than this and a column is not a code column. */
export const MAX_CODES = 20

// Names compare normalized: lower case, umlauts spelled out, only letters and digits.

/**
 * The words below are written with their umlauts spelled out (`benaemning`, `loesenord`, `aendrad`),
 * as German legacy names write them; Swedish and other legacy names drop the dots instead (`Benamning`,
 * `Losenord`, `Andrad`). Each word is matched both ways, the spelled-out one first.
 */
function bothSpellings (words: string[]): string[] {
  return [...new Set(words.flatMap((w) => [w, w.replace(/([aou])e/g, '$1')]))]
}

const bothSpellingsEach = <K extends string>(lists: Record<K, string[]>): Record<K, string[]> =>
  Object.fromEntries(Object.entries<string[]>(lists).map(([k, words]) => [k, bothSpellings(words)])) as Record<K, string[]>

const TABLE_SYNONYMS: Record<ResourceName, string[]> = bothSpellingsEach({
  materials: ['materials', 'material', 'materialbase', 'materialmaster', 'materialstamm', 'artikel', 'artikelstamm', 'article', 'articles', 'items', 'item', 'itemmaster', 'parts', 'part', 'products', 'product', 'produkt', 'artikelen', 'artikels', 'materialen', 'mat', 'art', 'produit', 'produits', 'articolo', 'articoli', 'anagrafica', 'anagraficaarticoli', 'materiale', 'materiali', 'prodotto', 'prodotti', 'articulo', 'articulos', 'producto', 'productos', 'artiklar', 'vara', 'varor', 'produkter', 'sku', 'skus', 'partmaster', 'stockitem', 'stockitems', 'inventoryitem', 'inventoryitems', 'teile', 'teil', 'materialien', 'towary', 'towar', 'artykuly', 'artykul', 'materialy', 'kartotekatowarow'],
  stations: ['stations', 'station', 'workplaces', 'workplace', 'workstations', 'workstation', 'arbeitsplatz', 'arbeitsplaetze', 'pickstation', 'terminals', 'terminal', 'lifts', 'lift', 'werkplekken', 'werkplek', 'werkplaatsen', 'vlm', 'wp', 'ap', 'poste', 'postes', 'postetravail', 'postesdetravail', 'postazione', 'postazioni', 'stazione', 'stazioni', 'estacion', 'estaciones', 'puesto', 'puestos', 'stationer', 'arbetsplats', 'arbetsplatser', 'plockplats', 'plockplatser', 'plockstation', 'plockstationer', 'ws', 'pickstations', 'pickingstation', 'pickingstations', 'stationen', 'kommissionierplatz', 'kommissionierplaetze', 'kommplatz', 'kommplaetze', 'pickplatz', 'pickplaetze', 'stanowiska', 'stanowisko', 'stanowiskapracy', 'stanowiskakompletacji'],
  users: ['gatewayusers', 'users', 'user', 'benutzer', 'anwender', 'bediener', 'gebruikers', 'gebruiker', 'operators', 'accounts', 'logins', 'utilisateur', 'utilisateurs', 'operateur', 'operateurs', 'utente', 'utenti', 'operatore', 'operatori', 'usuario', 'usuarios', 'anvaendare', 'operator', 'employees', 'employee', 'staff', 'pickers', 'picker', 'uzytkownicy', 'uzytkownik', 'operatorzy', 'pracownicy']
})

/** Tables with these words in their name or schema hold history or copies, not the master data. */
const NOISE_WORDS = new Set(['log', 'logs', 'hist', 'history', 'historie', 'archive', 'archiv', 'arch', 'backup', 'bak', 'old', 'alt', 'tmp', 'temp', 'copy', 'kopie', 'import', 'export', 'journal', 'protokoll', 'audit', 'movement', 'movements', 'buchung', 'booking', 'order', 'orders', 'auftrag', 'error', 'queue', 'staging'])

const CREATED = ['created', 'createdate', 'createddate', 'creationdate', 'datecreated', 'erstellt', 'erstelltam', 'angelegt', 'angelegtam', 'anlagedatum', 'erfasst', 'erfasstam', 'insertdate', 'inserted', 'crdate',
  'createdon', 'createtime', 'creationtime', 'erfdat', 'erdat', 'erfassungsdatum', 'anldat', 'anlagedat', 'insdat', 'aangemaakt', 'aangemaaktop', 'datumaangemaakt', 'datecreation', 'creele', 'creation', 'datacreazione', 'datainserimento', 'creato', 'creatoil', 'creata', 'creatail', 'fechacreacion', 'fechaalta', 'creado', 'skapad', 'skapaddatum', 'registrerad', 'addedon', 'added', 'dateadded', 'adddate', 'createdts', 'createts', 'creationts', 'crtdate', 'crtdt', 'entrydate', 'entered', 'enteredon', 'datautworzenia', 'utworzono', 'utworzony', 'datadodania']
const MODIFIED = ['lastchange', 'lastchanged', 'modified', 'changed', 'geaendert', 'geaendertam', 'aenderungsdatum', 'updatedat', 'updated', 'lastmodified', 'lastupdate', 'changedate', 'modifydate', 'moddate', 'modifiedat', 'modifiedon', 'updatedon',
  'lastmodifieddate', 'updatetime', 'changetime', 'aenddat', 'aendat', 'aedat', 'aendzeit', 'aenderungszeit', 'aenderung', 'aenderungam', 'letzteaenderung', 'upddat', 'gewijzigd', 'gewijzigdop', 'datumgewijzigd', 'mutatiedatum', 'mutdat', 'datemodif', 'datemodification', 'modifiele', 'modification', 'datamodifica', 'modificato', 'modificatoil', 'modificata', 'modificatail', 'dataultimamodifica', 'fechamodificacion', 'modificado', 'aendrad', 'aendraddatum', 'uppdaterad', 'senastaendrad', 'lastupd', 'lastupdated', 'lastupdt', 'updts', 'updatets', 'updatedts', 'changedts', 'chgdate', 'chgdt', 'lastchg', 'lastmod', 'moddt', 'upddate', 'upddt', 'updatedate', 'changedon', 'datamodyfikacji', 'zmodyfikowano', 'zmodyfikowany', 'datazmiany', 'ostatniazmiana']

/**
 * Words of a time column's name that say how or which time it keeps, beside the word for what happened;
 * also the type prefixes of Hungarian notation (VB6 and Access programs: dtmChanged, datCreated).
 */
const TIME_WORDS = new Set(['ms', 'msec', 'millis', 'epoch', 'unix', 'utc', 'ts', 'tstamp', 'stamp', 'timestamp', 'time', 'date', 'datetime', 'dt', 'at', 'on', 'sec', 'secs', 'seconds', 'last', 'datum', 'zeit', 'dtm', 'dat'])
/** Verb stems that name a time field's event as a word of a longer name (INSERT_TIME, MODIFY_TS). */
const TIME_STEMS: Record<string, string[]> = { createdAt: ['create', 'insert', 'ins', 'crt', 'add'], modifiedAt: ['modify', 'change', 'update', 'upd', 'chg', 'mod'] }

/** Legacy column names per resource and field, best first (the field's own name and the reference column come before these). */
const COLUMN_SYNONYMS: Record<ResourceName, Record<string, string[]>> = {
  materials: bothSpellingsEach({
    id: ['matid', 'artid', 'artikelid', 'materialid', 'itemid', 'partid', 'articleid', 'idarticle', 'idarticolo', 'articoloid', 'idarticulo', 'skuid', 'itemmasterid', 'productid', 'prodid', 'idtowaru', 'towarid', 'idartykulu'],
    materialNumber: ['matno', 'matnr', 'materialno', 'materialnr', 'artnr', 'artno', 'artikelnr', 'artikelnummer', 'artikelcode', 'itemno', 'itemnumber', 'itemnr', 'sku', 'partno', 'partnumber', 'partnr', 'articleno', 'articlenumber', 'number', 'nummer', 'nr', 'no', 'codearticle', 'numarticle', 'refarticle', 'reference', 'ref', 'codeproduit', 'codicearticolo', 'codarticolo', 'codart', 'codice', 'codiceprodotto', 'codigoarticulo', 'codarticulo', 'codigo', 'referencia', 'varunummer', 'itemcode', 'partcode', 'skucode', 'skuno', 'skunumber', 'articlecode', 'productcode', 'productno', 'prodno', 'prodcode', 'materialcode', 'matcode', 'stockcode', 'indeks', 'indekstowaru', 'kodtowaru', 'numertowaru'],
    name: ['matname', 'artname', 'bezeichnung', 'bezeichnung1', 'description1', 'desc1', 'bez', 'bez1', 'shortdescription', 'shorttext', 'kurztext', 'kurzbezeichnung', 'itemname', 'materialname', 'articlename', 'artikelname', 'title', 'benennung', 'omschrijving', 'naam', 'libelle', 'designation', 'nomarticle', 'nom', 'descrizione', 'denominazione', 'nome', 'nombre', 'denominacion', 'benaemning', 'namn', 'descr', 'itemdesc', 'itemdescription', 'partdesc', 'partdescription', 'skudesc', 'productdesc', 'productname', 'prodname', 'shortdesc', 'shortdescr', 'nazwa', 'nazwatowaru', 'nazwaartykulu'],
    description: ['beschreibung', 'description2', 'desc2', 'bezeichnung2', 'bez2', 'longtext', 'langtext', 'langbezeichnung', 'langbeschreibung', 'artikeltext', 'artikelbeschreibung', 'longdescription', 'zusatztext', 'text', 'remark', 'remarks', 'bemerkung', 'notes', 'note', 'desc', 'opmerking', 'langeomschrijving', 'commentaire', 'remarque', 'observation', 'descrizioneestesa', 'descrizione2', 'nota', 'observaciones', 'notas', 'descripcion', 'beskrivning', 'anteckning', 'kommentar', 'longdesc', 'longdescr', 'extdesc', 'extendeddescription', 'fulldescription', 'comments', 'comment', 'opis', 'opistowaru', 'uwagi'],
    unit: ['uom', 'me', 'einheit', 'unitofmeasure', 'baseunit', 'basisme', 'mengeneinheit', 'unitcode', 'uomcode', 'eenheid', 'unite', 'unitemesure', 'unitedemesure', 'unitamisura', 'unita', 'um', 'unidad', 'unidadmedida', 'unidaddemedida', 'enhet', 'stockunit', 'issueunit', 'unitcd', 'jm', 'jednostka', 'jednostkamiary'],
    barcode: ['ean', 'gtin', 'eancode', 'ean13', 'upc', 'barcodeno', 'streepjescode', 'codebarre', 'codebarres', 'codicebarre', 'codiceabarre', 'codigobarras', 'codigodebarras', 'streckkod', 'upccode', 'eanno', 'barcodenr', 'kodkreskowy', 'kodean'],
    minStock: ['reorderpoint', 'minqty', 'minquantity', 'minbestand', 'mindestbestand', 'meldebestand', 'mindestmenge', 'minmenge', 'meldemenge', 'safetystock', 'minimumstock', 'minbest', 'minvoorraad', 'minimumvoorraad', 'min', 'stockmin', 'stockmini', 'stockminimum', 'seuil', 'scortaminima', 'giacenzaminima', 'scortamin', 'stockminimo', 'minsaldo', 'minlager', 'minimilager', 'bestaellningspunkt', 'reorderpt', 'reorderlevel', 'reorderqty', 'rop', 'minlevel', 'minstocklevel', 'minonhand', 'stanminimalny', 'stanmin', 'zapasminimalny'],
    maxStock: ['maxqty', 'maxquantity', 'maxbestand', 'hoechstbestand', 'maximalbestand', 'hoechstmenge', 'maxmenge', 'maximalmenge', 'maximumstock', 'maxbest', 'maxvoorraad', 'maximumvoorraad', 'max', 'stockmax', 'stockmaxi', 'stockmaximum', 'scortamassima', 'giacenzamassima', 'scortamax', 'stockmaximo', 'maxsaldo', 'maxlager', 'maximilager', 'maxlevel', 'maxstocklevel', 'maxonhand', 'stanmaksymalny', 'stanmaks', 'stanmax', 'zapasmaksymalny'],
    weight: ['gewicht', 'gewichtkg', 'gewichtnetto', 'gewichtbrutto', 'grossweight', 'netweight', 'bruttogewicht', 'nettogewicht', 'nettogewichtkg', 'bruttogewichtkg', 'unitweight', 'stueckgewicht', 'stueckgewichtkg', 'poids', 'peso', 'vikt', 'netwt', 'grosswt', 'wt', 'weightkg', 'unitwt', 'itemweight', 'wgt', 'waga', 'wagakg', 'waganetto', 'wagabrutto'],
    blocked: ['locked', 'gesperrt', 'sperre', 'sperrkz', 'sperrkennzeichen', 'isblocked', 'islocked', 'blockflag', 'lockflag', 'lock', 'block', 'sperr', 'geblokkeerd', 'blokkade', 'bloque', 'verrouille', 'bloccato', 'bloqueado', 'spaerrad', 'spaerr', 'hold', 'holdflag', 'onhold', 'holdyn', 'blockedflag', 'blockedyn', 'lockedyn', 'zablokowany', 'blokada'],
    blockReason: ['locktext', 'lockreason', 'sperrgrund', 'sperrtext', 'blocktext', 'blockedreason', 'blokkadereden', 'reden', 'motifblocage', 'raisonblocage', 'motivoblocco', 'causaleblocco', 'motivobloqueo', 'spaerrorsak', 'holdreason', 'holdtext', 'holdtxt', 'holdcode', 'blocktxt', 'blockreason', 'locktxt', 'powodblokady', 'przyczynablokady'],
    stockQuantity: ['qtyonhand', 'bestand', 'stock', 'stockqty', 'quantity', 'qty', 'menge', 'mengestueck', 'mengestk', 'mengest', 'bestandstueck', 'bestandstk', 'bestandsmenge', 'lagermenge', 'istmenge', 'stueckzahl', 'onhand', 'istbestand', 'currentstock', 'lagerbestand', 'voorraad', 'quantite', 'qte', 'stockreel', 'giacenza', 'quantita', 'qta', 'disponibile', 'disponibilita', 'esistenza', 'existencias', 'cantidad', 'stockactual', 'saldo', 'lagersaldo', 'antal', 'qoh', 'onhandqty', 'stockonhand', 'soh', 'qtyavailable', 'available', 'ilosc', 'stan', 'stanmagazynowy', 'iloscdostepna'],
    createdAt: CREATED,
    modifiedAt: MODIFIED
  }),
  stations: bothSpellingsEach({
    id: ['wpid', 'stationid', 'arbeitsplatzid', 'workplaceid', 'terminalid', 'liftid', 'apid', 'idposte', 'idpostazione', 'idestacion', 'stationsnr', 'stationsid', 'wsid', 'workstationid', 'pickstationid', 'idstanowiska', 'stanowiskoid', 'nrstanowiska'],
    name: ['wpname', 'stationname', 'workplacename', 'bezeichnung', 'bez', 'kurzname', 'kurzbezeichnung', 'wpnr', 'stationno', 'stationnr', 'code', 'apname', 'apbez', 'naam', 'nomposte', 'libelle', 'nom', 'nomepostazione', 'nome', 'codice', 'nombre', 'namn', 'benaemning', 'wsname', 'workstationname', 'wscode', 'stationcode', 'nazwa', 'nazwastanowiska', 'kodstanowiska'],
    description: ['beschreibung', 'bezeichnung2', 'text', 'omschrijving', 'opmerking', 'bemerkung', 'remark', 'remarks', 'notes', 'desc', 'commentaire', 'descrizione', 'descripcion', 'beskrivning', 'wsdesc', 'workstationdesc', 'stationdesc', 'descr', 'opis', 'uwagi'],
    type: ['wptype', 'wptyp', 'art', 'typ', 'wpart', 'stationtype', 'stationtyp', 'lifttype', 'lifttyp', 'kind', 'typecode', 'aptyp', 'aptype', 'soort', 'typeposte', 'tipo', 'tipopostazione', 'wskind', 'wstype', 'stationkind', 'kindcode', 'typstanowiska', 'rodzaj', 'rodzajstanowiska'],
    warehouse: ['lager', 'whs', 'lagerort', 'warehouseid', 'warehousecode', 'lagerid', 'lagernr', 'whsid', 'whscode', 'werk', 'site', 'plant', 'magazijn', 'magazijncode', 'magcode', 'entrepot', 'magasin', 'depot', 'magazzino', 'deposito', 'almacen', 'whse', 'whsecode', 'whseid', 'wh', 'whcode', 'warehouseno', 'sitecode', 'magazyn', 'idmagazynu', 'kodmagazynu'],
    controllerId: ['controller', 'plc', 'sps', 'plcid', 'spsid', 'controllername', 'plcname', 'spsname', 'ctrl', 'ctrlid', 'steuerung', 'besturing', 'automate', 'controleur', 'controllore', 'controlador', 'styrning', 'styrenhet', 'ctrlname', 'ctrlcode', 'plccode', 'sterownik', 'idsterownika', 'sterownikplc'],
    address: ['addr', 'adr', 'spsadr', 'adresse', 'plcaddress', 'spsadresse', 'busaddress', 'busadresse', 'nodeid', 'node', 'adres', 'indirizzo', 'direccion', 'adress', 'ctrladdr', 'ctrladdress', 'plcaddr', 'nodeaddr', 'nodeaddress', 'adressterownika'],
    enabled: ['active', 'aktiv', 'isactive', 'isenabled', 'inbetrieb', 'enable', 'actief', 'actif', 'attivo', 'attiva', 'abilitato', 'abilitata', 'activo', 'habilitado', 'activeflag', 'activeyn', 'enabledyn', 'isactiveflag', 'aktywny', 'aktywne', 'aktywna', 'czynny', 'czynne'],
    createdAt: CREATED,
    modifiedAt: MODIFIED
  }),
  users: bothSpellingsEach({
    id: ['userid', 'benutzerid', 'opid', 'operatorid', 'empid', 'employeeid', 'iduzytkownika', 'uzytkownikid', 'idoperatora'],
    username: ['login', 'loginname', 'user', 'benutzer', 'benutzername', 'anmeldename', 'kennung', 'gebruikersnaam', 'loginnaam', 'identifiant', 'nomutilisateur', 'nomeutente', 'utente', 'nombreusuario', 'usuario', 'anvaendarnamn', 'anvaendare', 'loginid', 'logon', 'logonname', 'logonid', 'opcode', 'operatorcode', 'signon', 'usercode', 'uzytkownik', 'nazwauzytkownika', 'loginuzytkownika'],
    passwordHash: ['password', 'pwhash', 'passwordhashed', 'passwort', 'kennwort', 'wachtwoord', 'pwd', 'pw', 'motdepasse', 'mdp', 'parolachiave', 'contrasena', 'clave', 'loesenord', 'pwdhash', 'passhash', 'pwhashed', 'passwordhash', 'haslo', 'haslohash', 'skrothasla'],
    type: ['usertype', 'role', 'rolle', 'rol', 'ruolo', 'roll', 'roletype', 'rolecode', 'accesslevel', 'usergroup', 'rola', 'uprawnienia'],
    displayName: ['fullname', 'name', 'anzeigename', 'naam', 'volledigenaam', 'nomcomplet', 'nom', 'nomecompleto', 'nombrecompleto', 'fulltnamn', 'namn', 'opname', 'operatorname', 'employeename', 'displayname', 'imienazwisko', 'nazwisko', 'nazwiskoimie'],
    enabled: ['active', 'aktiv', 'isactive', 'actief', 'actif', 'attivo', 'activo', 'habilitado', 'enabledyn', 'activeyn', 'activeflag', 'aktywny', 'aktywne', 'czynny'],
    tokenVersion: ['tokenversion'],
    lastLoginAt: ['lastlogin', 'letzteanmeldung', 'derniereconnexion', 'dernierlogin', 'dernieracces', 'ostatnielogowanie', 'dataostatniegologowania'],
    createdAt: CREATED,
    modifiedAt: MODIFIED
  })
}

/** German column names suggest German codes (J/N) when a flag column shows only one of its two codes. */
const GERMAN_WORDS = new Set(['gesperrt', 'sperre', 'sperrkz', 'sperrkennzeichen', 'aktiv', 'inbetrieb'])
/** Polish ones suggest T/N (Tak/Nie): 'T' is no true/false pair there, and 'N' no English no */
const POLISH_WORDS = new Set(['zablokowany', 'blokada', 'aktywny', 'aktywne', 'aktywna', 'czynny', 'czynne'])

const TRUE_CODES = new Set(['y', 'yes', 'j', 'ja', '1', 't', 'true', 'x', 'on', 'w', 'wahr', 's', 'si', 'sim', 'o', 'oui', 'v', 'vrai'])
const FALSE_CODES = new Set(['n', 'no', 'nein', '0', 'f', 'false', '', 'off', 'falsch', 'nao', 'non', 'faux'])
/** when only one code of a pair is seen: its partner (the other side of the same convention) */
const PARTNERS: Record<string, string> = { y: 'n', yes: 'no', j: 'n', ja: 'nein', t: 'f', true: 'false', x: '', on: 'off', f: 't', false: 'true', no: 'yes', nein: 'ja', off: 'on', 1: '0', 0: '1', s: 'n', si: 'no', sim: 'nao', o: 'n', oui: 'non', v: 'f', vrai: 'faux' }

/** stations.type: the API's values and the legacy codes that look like them. */
const STATION_TYPES: Record<string, { codes: string[], prefixes: string[] }> = {
  vlm: { codes: ['v', 'vlm', 'lift', 'l', 'shuttle', 'vertikallift', 'verticallift', 'winda'], prefixes: ['vertik', 'vertic', 'lift', 'shuttle', 'winda'] },
  carousel: { codes: ['k', 'c', 'karussell', 'karussel', 'carousel', 'carrousel', 'paternoster', 'hk', 'vk', 'karuzela'], prefixes: ['karus', 'carou', 'carro', 'pater', 'karuz'] },
  ptl: { codes: ['p', 'ptl', 'pbl', 'picktolight', 'pickbylight'], prefixes: ['picktol', 'pickbyl'] },
  manual: { codes: ['m', 'h', 'man', 'manual', 'manuell', 'hand', 'handmatig', 'handlager', 'reczne', 'reczny', 'reczna'], prefixes: ['manu', 'handm', 'reczn'] }
}

/** fields whose stored codes get a value map besides booleans */
const CODE_FIELDS: Partial<Record<ResourceName, string[]>> = { stations: ['type'], users: ['type'] }

export function normalizeName (name: string): string {
  return name.toLowerCase().replaceAll('ä', 'ae').replaceAll('ö', 'oe').replaceAll('ü', 'ue').replaceAll('ß', 'ss')
    // other accents come off (libellé, quantità, unidad de medida, lösenord above): é -> e, å -> a, ñ -> n
    .normalize('NFD').replace(/[\u0300-\u036f]/g, '').replaceAll('ø', 'o').replaceAll('ł', 'l').replaceAll('đ', 'd').replaceAll('æ', 'ae').replaceAll('œ', 'oe')
    .replace(/[^a-z0-9]/g, '')
}

/** `MaterialBase` -> material, base; `ArtID` -> art, id; `stock_qty` -> stock, qty */
export function nameTokens (name: string): string[] {
  return name
    .replace(/([\p{Ll}0-9])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu}+)(\p{Lu}\p{Ll})/gu, '$1 $2')
    // every script's letters are part of a word (PowódBlokady, Hasło, Libellé_Court), not where it breaks
    .split(/[^\p{L}\p{N}]+/u)
    .map(normalizeName)
    .filter((t) => t !== '')
}

/** The configuration accepts only these names (schemas/config.ts); others cannot be proposed. */
const configurable = (name: string): boolean => Value.Check(TableMappingConfig.properties.table, name)

// ---- tables -------------------------------------------------------------------------------

/** Every table and view, in every schema. No user input: nothing to bind. */
export function listTablesStatement (dialect: DialectName): Statement {
  if (dialect === 'mssql') {
    // sys.partitions holds row counts without scanning; views (unless indexed) have none
    return {
      text: 'SELECT [t].[TABLE_SCHEMA] AS [schema], [t].[TABLE_NAME] AS [name], [t].[TABLE_TYPE] AS [type], ' +
        '(SELECT SUM([p].[rows]) FROM sys.partitions AS [p] WHERE [p].[object_id] = OBJECT_ID(QUOTENAME([t].[TABLE_SCHEMA]) + N\'.\' + QUOTENAME([t].[TABLE_NAME])) AND [p].[index_id] IN (0, 1)) AS [rows] ' +
        'FROM INFORMATION_SCHEMA.TABLES AS [t] ORDER BY [t].[TABLE_SCHEMA], [t].[TABLE_NAME]',
      params: []
    }
  }
  return {
    text: "SELECT name AS name, type AS type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    params: []
  }
}

const tableMapping = (table: TableInfo): TableMapping => ({ schema: table.schema, table: table.name, columns: {} })

/** The tables and views of the database, with row counts where they are cheap to get. */
export async function listTables (db: Database): Promise<TableInfo[]> {
  const rows = await db.query(listTablesStatement(db.dialect))
  const tables: TableInfo[] = rows.map((r) => {
    const t: TableInfo = { name: String(r.name), view: String(r.type).toUpperCase() === 'VIEW' }
    if (db.dialect === 'mssql') t.schema = String(r.schema)
    // SUM over bigint comes back as text from the driver
    if (r.rows !== null && r.rows !== undefined) t.rows = Number(r.rows)
    return t
  })
  if (db.dialect === 'sqlite') {
    // an embedded database is small enough to count; a view may be arbitrarily expensive, so not those
    const d = dialectFor('sqlite')
    for (const t of tables.filter((t) => !t.view)) {
      const [row] = await db.query({ text: `SELECT COUNT(*) AS n FROM ${d.table(tableMapping(t))}`, params: [] })
      t.rows = Number(row?.n)
    }
  }
  return tables
}

const qualified = (t: TableInfo): string => t.schema === undefined ? t.name : `${t.schema}.${t.name}`

/** How much a table's name looks like the resource's (0: not at all), and why. */
export function tableNameScore (resource: ResourceName, table: TableInfo): { score: number, reason: string } {
  const synonyms = TABLE_SYNONYMS[resource]
  const n = normalizeName(table.name)
  const tokens = nameTokens(table.name)
  let score = 0
  let reason = ''
  const exact = synonyms.indexOf(n)
  if (exact >= 0) {
    score = 100 - exact
    reason = `name '${table.name}' ~ ${resource}`
  } else {
    // tblArtikel, T_MATERIAL, ArtikelStamm: a known word with a prefix or suffix
    const stripped = n.replace(/^(tbl|tab|tb|t)(?=[a-z])/, '').replace(/(base|master|stamm|data|daten|tab|tbl)$/, '')
    const token = tokens.find((t) => synonyms.includes(t) && t.length >= 3)
    if (stripped !== n && synonyms.includes(stripped)) score = 80
    else if (token !== undefined) score = 60
    else if (synonyms.some((s) => s.length >= 5 && n.includes(s))) score = 40
    if (score > 0) reason = `name '${table.name}' contains a word for ${resource}`
  }
  if (score > 0 && [...tokens, ...nameTokens(table.schema ?? '')].some((t) => NOISE_WORDS.has(t))) {
    score -= 45
    reason += ' (but looks like a log, history or copy)'
  }
  return { score: Math.max(score, 0), reason }
}

// ---- columns ------------------------------------------------------------------------------

interface ColumnScore { score: number, reason: string }

interface MatchContext {
  resource: ResourceName
  table: TableInfo
  /** the configured column per field, when the table is the configured one */
  configured: Record<string, string>
}

/** Name prefixes legacy tables put before their column names (Artikel.ArtikelNr, Arbeitsplatz.WpTyp). */
function columnPrefixes (ctx: MatchContext): string[] {
  const tokens = nameTokens(ctx.table.name)
  return [...new Set([normalizeName(ctx.table.name), ...(tokens.length > 0 ? [tokens[0]] : []), ...TABLE_SYNONYMS[ctx.resource]])].filter((p) => p.length >= 2)
}

/** How much a column's name looks like a field's (0: not at all). */
export function columnNameScore (field: string, column: ColumnInfo, ctx: MatchContext): ColumnScore {
  const n = normalizeName(column.name)
  const configured = ctx.configured[field]
  if (configured !== undefined && n === normalizeName(configured)) return { score: 200, reason: 'the configured column' }
  const reference = referenceMappings[ctx.resource].columns[field]
  const synonyms = [...new Set([normalizeName(field), ...(reference === undefined ? [] : [normalizeName(reference)]), ...COLUMN_SYNONYMS[ctx.resource][field] ?? []])]
  const tokens = nameTokens(column.name)
  const kind = resources[ctx.resource].fields[field]?.kind
  // CreatedBy, AngelegtVon: who, not when
  if (kind === 'datetime' && tokens.some((t) => ['by', 'von', 'user', 'benutzer', 'usr'].includes(t))) return { score: 0, reason: '' }
  const exact = synonyms.indexOf(n)
  if (exact >= 0) return { score: 100 - Math.min(exact, 20), reason: 'name' }
  if (field === 'id' && column.identity) return { score: 95, reason: 'identity column' }
  for (const prefix of columnPrefixes(ctx)) {
    if (n.length > prefix.length && n.startsWith(prefix) && synonyms.includes(n.slice(prefix.length))) return { score: 80, reason: 'name after the table prefix' }
  }
  // a key without IDENTITY (a WITHOUT ROWID table, WS_ID; a German station table's Nr): the table's own unique
  // number column named …ID or …Nr. …Nr scores below any field's exact name (80 and up): a material table's
  // unique Nr is its article number first (the id then shares the column, below)
  if (field === 'id' && column.unique === true && /int|numeric|decimal|number/i.test(column.type)) {
    if (n.endsWith('id')) return { score: 70, reason: "the table's unique key, named …ID" }
    if (/(nr|nummer)$/.test(n)) return { score: 60, reason: "the table's unique key, named …Nr" }
  }
  if (field === 'id') return { score: 0, reason: '' }
  // CREATED_MS, LAST_MODIFIED_EPOCH, MODIFY_TS: the time's word, and words that say how it is kept, clear
  // enough for a number column whose values then give the format
  if (kind === 'datetime' && tokens.length > 1) {
    const words = tokens.filter((t) => !TIME_WORDS.has(t))
    if (words.length === 1 && (synonyms.includes(words[0]) || TIME_STEMS[field]?.includes(words[0]) === true)) return { score: 85, reason: 'its word and how the time is kept' }
  }
  if (tokens.some((t) => t.length >= 3 && synonyms.includes(t))) return { score: 60, reason: 'a word of the name' }
  if (synonyms.some((s) => s.length >= 5 && n.includes(s))) return { score: 40, reason: 'part of the name' }
  return { score: 0, reason: '' }
}

/** The unique, NOT NULL text columns no field took: a table's text keys. */
function textKeys (dialect: DialectName, columns: ColumnInfo[], byField: Map<string, FieldMatch>): ColumnInfo[] {
  const taken = new Set([...byField.values()].map((m) => m.column.name.toLowerCase()))
  const text = (c: ColumnInfo): boolean => ['text', 'ntext'].includes(categoryOf(dialect, c, 'string'))
  return columns.filter((c) => c.unique === true && !c.nullable && !c.computed && configurable(c.name) && text(c) && !taken.has(c.name.toLowerCase()))
}

/** A table keyed by GUIDs (or another text the database fills, by a default): that one key is the id. */
function filledTextKey (dialect: DialectName, columns: ColumnInfo[], byField: Map<string, FieldMatch>, fits: Record<string, Fit>, idField: string): void {
  const keys = textKeys(dialect, columns, byField).filter((c) => c.hasDefault)
  if (keys.length !== 1) return
  byField.set(idField, { field: idField, column: keys[0], reason: "the table's key, which the database fills", notes: [] })
  fits[idField] = 'good'
}

/**
 * A table keyed by text that no field took and the database does not fill (a station table keyed by its
 * code 'PTL-01'): the one such column is the id and the natural key (a station's name), and the column
 * the name had taken by its name (Bezeichnung) becomes the description where none was found.
 */
function textKey (dialect: DialectName, naturalKey: string | undefined, columns: ColumnInfo[], byField: Map<string, FieldMatch>, fits: Record<string, Fit>, idField: string): void {
  const keys = textKeys(dialect, columns, byField)
  if (keys.length !== 1) return
  const [column] = keys
  const named = naturalKey === undefined ? undefined : byField.get(naturalKey)
  if (naturalKey === undefined || named?.column.unique === true) return
  byField.set(idField, { field: idField, column, reason: `the table's key, its ${naturalKey}`, notes: [] })
  byField.set(naturalKey, { field: naturalKey, column, reason: `the table's key (text): the ${naturalKey} is the id`, notes: [] })
  fits[idField] = 'good'
  fits[naturalKey] = 'good'
  if (named !== undefined && !byField.has('description')) {
    byField.set('description', { ...named, field: 'description', reason: `${named.reason}; the text beside the key` })
    fits.description = 'good'
  }
}

export interface ColumnProposal {
  fields: FieldMatch[]
  /** per matched field, the kind of fit (codes: needs a value map) */
  fits: Record<string, Fit>
  unmatched: string[]
  /** columns skipped because the configuration cannot name them */
  unnamable: string[]
}

/**
 * Assigns columns to fields: every (field, column) pair that fits by type is scored by name, and
 * the best pairs are taken first, so that a column serves one field only (MinBestand goes to
 * minStock before stockQuantity can see 'bestand' in it).
 */
export function matchColumns (dialect: DialectName, resource: ResourceName, table: TableInfo, columns: ColumnInfo[], configured: Record<string, string> = {}): ColumnProposal {
  const def = resources[resource]
  const ctx: MatchContext = { resource, table, configured }
  const unnamable = columns.filter((c) => !configurable(c.name)).map((c) => c.name)
  const pairs: Array<{ field: string, column: ColumnInfo, score: number, reason: string, fit: Fit, order: number }> = []
  const fieldNames = Object.keys(def.fields)
  fieldNames.forEach((field, order) => {
    for (const column of columns) {
      if (!configurable(column.name)) continue
      const fit = kindFit(dialect, column, def.fields[field])
      if (fit === 'no') continue
      const { score, reason } = columnNameScore(field, column, ctx)
      // a weak type fit needs a name that says it clearly (a text column 'CreatedBy' is no createdAt), and
      // so does a number column for a time (its values then decide the format)
      if (score === 0 || ((fit === 'weak' || fit === 'format') && score < 80)) continue
      pairs.push({ field, column, score: fit === 'good' ? score + 10 : score, reason, fit, order })
    }
  })
  pairs.sort((a, b) => b.score - a.score || a.order - b.order)
  const byField = new Map<string, FieldMatch>()
  const fits: Record<string, Fit> = {}
  const used = new Set<string>()
  for (const p of pairs) {
    if (byField.has(p.field) || used.has(p.column.name.toLowerCase())) continue
    byField.set(p.field, { field: p.field, column: p.column, reason: p.reason, notes: [] })
    fits[p.field] = p.fit
    used.add(p.column.name.toLowerCase())
  }
  // name is required, description is not: a table with a Description column and none for the name
  // (Access' tblItems) gives it to name
  const description = byField.get('description')
  if (resource === 'materials' && !byField.has('name') && description !== undefined && fits.description === 'good') {
    byField.delete('description')
    byField.set('name', { ...description, field: 'name', reason: `${description.reason}; the only text for the required name` })
    fits.name = fits.description
    delete fits.description
  }
  const idField = fieldNames.find((f) => def.fields[f].id === true)!
  // a text key the database fills (a GUID): the id, and the article number stays a field that may change
  if (!byField.has(idField)) filledTextKey(dialect, columns, byField, fits, idField)
  // a table keyed by its article number, without a numeric id of its own: the id is that column too
  const key = def.naturalKey === undefined ? undefined : byField.get(def.naturalKey)
  if (!byField.has(idField) && key !== undefined && key.column.unique === true) {
    byField.set(idField, { field: idField, column: key.column, reason: `the table's key, its ${def.naturalKey}`, notes: [] })
    fits[idField] = 'good'
  }
  if (!byField.has(idField)) textKey(dialect, def.naturalKey, columns, byField, fits, idField)
  return {
    fields: fieldNames.filter((f) => byField.has(f)).map((f) => byField.get(f)!),
    fits,
    unmatched: fieldNames.filter((f) => !byField.has(f)),
    unnamable
  }
}

// ---- times kept as numbers ----------------------------------------------------------------

const FORMAT_NAMES: Record<TimeFormat, string> = {
  unix: 'Unix time in seconds',
  'unix-ms': 'Unix time in milliseconds',
  yyyymmdd: 'dates as YYYYMMDD',
  yyyymmddhhmmss: 'times as YYYYMMDDhhmmss',
  julianday: 'Julian days, as SQLite\'s julianday() returns them',
  'yyyy-mm-dd hh:mm:ss': 'times as YYYY-MM-DD HH:MM:SS text in whole seconds, as SQLite\'s CURRENT_TIMESTAMP writes them'
}

/** SQLite's CURRENT_TIMESTAMP: text of a time in whole seconds, 'YYYY-MM-DD HH:MM:SS' (format 'yyyy-mm-dd hh:mm:ss'). */
const SECONDS_TEXT = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/

/** How many of a time column's most frequent values its format is guessed from. */
export const TIME_SAMPLE = 1000

/** A time column's format, guessed from its values, and the values it leaves out (they read as null). */
export interface TimeFormatGuess {
  format?: TimeFormat
  /** the rows looked at that hold a date (not NULL, 0, 99999999 or blank) */
  rows: number
  /** values of those rows that do not fit the format proposed, most frequent first */
  misfits: CodeCount[]
}

/** The share of the rows looked at that the format must fit: one stray value among thousands does not hide it. */
const TIME_FORMAT_SHARE = 0.9

function timeKind (s: string, text: boolean, julian: boolean): TimeFormat | 'other' {
  // a fraction only in a number column (Unix time in a REAL one); digits of a date are whole
  if (!(text ? /^\d+$/ : /^\d+(?:\.\d+)?$/).test(s)) return 'other'
  const n = Number(s)
  if ((s.length === 8 || s.length === 14) && compactTime(s) !== undefined) return s.length === 8 ? 'yyyymmdd' : 'yyyymmddhhmmss'
  if (!text && n >= 1e8 && n < 1e10) return 'unix'
  if (!text && n >= 1e11 && n < 1e13) return 'unix-ms'
  // SQLite's own numeric time (julianday('now'): 2460400.5 and its fraction), which no legacy program writes as Unix time
  if (julian && !text && isJulianDay(n)) return 'julianday'
  return 'other'
}

/**
 * The format a time column's stored values show (its most frequent values, with their row counts):
 * the one kind (Unix seconds from 1973 to 2286, milliseconds from 1973, calendar dates as digits)
 * that at least 90% of the rows holding a date show (NULL, 0 and blanks, a legacy "no date", do not
 * count); none when they show none or are mixed. Text columns hold digits only. The rows the format
 * does not fit are returned, so that they can be named: they read as null under it. On SQLite (`julian`),
 * a column whose values are all text of whole seconds ('2026-11-28 03:29:26') keeps that form ('yyyy-mm-dd hh:mm:ss').
 */
export function timeFormatOf (category: Category, values: CodeCount[], julian = false): TimeFormatGuess {
  const text = category === 'text' || category === 'ntext'
  // SQLite (julian): every value is text of whole seconds, as the picking system's CURRENT_TIMESTAMP writes them;
  // such a column reads without a format too, but the gateway's milliseconds may be refused by a program that parses this form
  const held = values.filter((v) => v.value !== null && v.value !== undefined)
  if (julian && held.length > 0 && held.every((v) => typeof v.value === 'string' && SECONDS_TEXT.test(v.value))) {
    return { format: 'yyyy-mm-dd hh:mm:ss', rows: held.reduce((sum, v) => sum + v.count, 0), misfits: [] }
  }
  const kinds = new Map<TimeFormat | 'other', number>()
  const classified: Array<{ value: CodeCount, kind: TimeFormat | 'other' }> = []
  let rows = 0
  for (const v of values) {
    if (v.value === null || v.value === undefined) continue
    const s = String(v.value).trim()
    // a legacy "no date": 0, 99999999, blanks
    if (s === '' || /^0+$/.test(s) || /^9{8,}$/.test(s)) continue
    const kind = timeKind(s, text, julian)
    kinds.set(kind, (kinds.get(kind) ?? 0) + v.count)
    classified.push({ value: v, kind })
    rows += v.count
  }
  let best: TimeFormat | undefined
  let bestRows = 0
  for (const [kind, count] of kinds) {
    if (kind !== 'other' && count > bestRows) { best = kind; bestRows = count }
  }
  if (best === undefined || bestRows < rows * TIME_FORMAT_SHARE) return { rows, misfits: [] }
  return { format: best, rows, misfits: classified.filter((c) => c.kind !== best).map((c) => c.value).sort((a, b) => b.count - a.count) }
}


// ---- value maps ---------------------------------------------------------------------------

/**
 * A column's distinct values, most frequent first, at most MAX_CODES + 1 of them. SQL Server cannot
 * GROUP BY text or ntext (error 306): those through (n)varchar(max), as the gateway's filters compare them.
 */
export function distinctValuesStatement (dialect: DialectName, table: TableInfo, column: string, type?: string, limit = MAX_CODES + 1): Statement {
  const d = dialectFor(dialect)
  const ident = d.ident(column)
  const legacy = dialect === 'mssql' ? type?.toLowerCase() : undefined
  const col = legacy === 'text' ? `CAST(${ident} AS varchar(max))` : legacy === 'ntext' ? `CAST(${ident} AS nvarchar(max))` : ident
  const from = d.table(tableMapping(table))
  return dialect === 'mssql'
    ? { text: `SELECT TOP (${limit}) ${col} AS [v], COUNT(*) AS [n] FROM ${from} GROUP BY ${col} ORDER BY COUNT(*) DESC`, params: [] }
    : { text: `SELECT ${col} AS "v", COUNT(*) AS "n" FROM ${from} GROUP BY ${col} ORDER BY COUNT(*) DESC LIMIT ${limit}`, params: [] }
}

/** A column's values with their row counts, most frequent first (distinctValuesStatement or timeValuesStatement). */
async function valueCounts (db: Database, statement: Statement): Promise<CodeCount[]> {
  return (await db.query(statement)).map((r: Row) => ({ value: r.v, count: Number(r.n) }))
}

/** A time column's most frequent values, TIME_SAMPLE of them, which its format is guessed from. */
export function timeValuesStatement (dialect: DialectName, table: TableInfo, column: string, type?: string): Statement {
  return distinctValuesStatement(dialect, table, column, type, TIME_SAMPLE)
}

/** Only short code columns are grouped: SQL Server cannot GROUP BY text/ntext, and a long text is no code. */
function groupable (dialect: DialectName, column: ColumnInfo, category: Category): boolean {
  if (category === 'integer') return dialect === 'sqlite' || ['tinyint', 'smallint', 'int', 'bigint'].includes(column.type)
  if (category !== 'text' && category !== 'ntext') return false
  if (column.maxLength === -1 || (column.maxLength ?? 0) > 200) return false
  return dialect === 'sqlite' || ['char', 'varchar', 'nchar', 'nvarchar'].includes(column.type)
}

/**
 * Stored codes as the map will name them: numbers stay numbers, fixed-width padding goes. Values
 * that differ only in trailing spaces ('P' and 'P ' another program left) are one code: a map that
 * named it twice would be refused at start ("the stored code is given for two values"). With
 * `foldCase`, so are values that differ only in case ('J' and 'j'), spelled as most rows spell them:
 * a map matches its codes regardless of case where no two values' codes differ only in case.
 */
function codesOf (rows: CodeCount[], numeric: boolean, foldCase = false): Array<{ code: StoredCode, count: number }> {
  const codes = new Map<StoredCode, { code: StoredCode, count: number }>()
  for (const r of rows) {
    if (r.value === null || r.value === undefined) continue
    // a number stays one where a SQLite column without a type holds numbers and text alike
    const code = numeric || typeof r.value === 'number' ? Number(r.value) : String(r.value).trimEnd()
    const seen = codes.get(code)
    if (seen === undefined) codes.set(code, { code, count: r.count })
    else seen.count += r.count
  }
  // the first of a value's codes is the one written: the most frequent after the merge ('J' and 'J '
  // together outnumber 'j'), and on a tie, whose order the database leaves open, in a fixed order:
  // text before a number, then alphabetically, upper case before lower ('J' rather than 'j' or -1)
  const order = (a: StoredCode, b: StoredCode): number => {
    if (typeof a === 'number' || typeof b === 'number') return typeof a === 'number' ? (typeof b === 'number' ? a - b : 1) : -1
    const [la, lb] = [a.toLowerCase(), b.toLowerCase()]
    return la < lb ? -1 : la > lb ? 1 : a < b ? -1 : a > b ? 1 : 0
  }
  const sorted = [...codes.values()].sort((a, b) => b.count - a.count || order(a.code, b.code))
  if (!foldCase) return sorted
  // the first spelling met in that order is the one most rows hold, upper case on a tie
  const folded = new Map<StoredCode, { code: StoredCode, count: number }>()
  for (const c of sorted) {
    const key = typeof c.code === 'string' ? c.code.toLowerCase() : c.code
    const seen = folded.get(key)
    if (seen === undefined) folded.set(key, { ...c })
    else seen.count += c.count
  }
  return [...folded.values()].sort((a, b) => b.count - a.count || order(a.code, b.code))
}

const show = (code: StoredCode): string => JSON.stringify(code)

function oneOrMany (codes: StoredCode[]): StoredCode | StoredCode[] {
  return codes.length === 1 ? codes[0] : codes
}

/** Keeps the case of the code seen: a partner of 'j' is 'n', of 'J' is 'N'. */
function partnerOf (code: string, language: 'de' | 'pl' | undefined): string | undefined {
  const lower = code.toLowerCase()
  if (lower === '') return 'X'
  const partner = lower === 'n'
    ? (language === 'de' ? 'j' : language === 'pl' ? 't' : 'y')
    : lower === 't' && language === 'pl' ? 'n' : PARTNERS[lower]
  if (partner === undefined || code === lower) return partner
  return code === code.toUpperCase() ? partner.toUpperCase() : partner.charAt(0).toUpperCase() + partner.slice(1)
}

export interface MapProposal {
  values?: ValueMap
  /** false: the column cannot serve the field (codes that do not read as true/false) */
  usable: boolean
  notes: string[]
}

/**
 * A boolean field's value map from the codes a column holds: Y/N, J/N, 1/0, T/F, X/''. A bit or
 * 0/1 integer column needs none. With one code seen, its partner is guessed and said so.
 */
export function proposeBooleanMap (column: ColumnInfo, category: Category, rows: CodeCount[]): MapProposal {
  const numeric = category === 'integer'
  // true and false have no code that differs from the other's only in case, so the map matches regardless of
  // case (and trailing blanks): 'j ' beside 'J' needs no place of its own
  const codes = codesOf(rows, numeric, true)
  if (rows.length > MAX_CODES) return { usable: numeric, notes: [`more than ${MAX_CODES} distinct values: no value map proposed`] }
  if (numeric) {
    const set = new Set(codes.map((c) => c.code))
    if ([...set].every((c) => c === 0 || c === 1)) return { usable: true, notes: [] }
    if ([...set].every((c) => c === 0 || c === -1)) return { usable: true, values: { true: -1, false: 0 }, notes: [] }
    return { usable: true, notes: [`holds ${[...set].map(show).join(', ')}: no value map proposed (any value but 0 reads as true)`] }
  }
  if (codes.length === 0) return { usable: false, notes: [`column '${column.name}' holds codes but no rows to learn them from: map it by hand with a value map`] }
  const yes: StoredCode[] = []
  const no: StoredCode[] = []
  const unknown: StoredCode[] = []
  for (const { code } of codes) {
    const lower = String(code).toLowerCase()
    // numbers beside text codes (a SQLite column without a type): 0 false, 1 and VB's -1 true
    if (typeof code === 'number') (code === 0 ? no : code === 1 || code === -1 ? yes : unknown).push(code)
    else if (TRUE_CODES.has(lower)) yes.push(code)
    else if (FALSE_CODES.has(lower)) no.push(code)
    else unknown.push(code)
  }
  if (unknown.length > 0) {
    return { usable: false, notes: [`column '${column.name}' holds ${unknown.map(show).join(', ')}, which do not read as true/false: map it by hand with a value map`] }
  }
  // a blank beside a letter (Y/N with rows left blank, often the most of them) is a row never set, not the
  // code the program writes: 'N' is written, '' still reads as false. Blank alone (X/'') stays the code.
  const blankLast = (list: StoredCode[]): void => { list.sort((a, b) => Number(a === '') - Number(b === '')) }
  blankLast(yes)
  blankLast(no)
  const notes: string[] = []
  // 'X' is the ticked mark of an X/blank flag; beside another letter for true (J/N) it belongs to no pair the
  // column shows, and may be a third state: named, not placed (it reads as stored until it is added to a value)
  const letters = yes.filter((c) => typeof c === 'string' && c.toLowerCase() !== 'x')
  const ticked = letters.length === 0 ? -1 : yes.findIndex((c) => typeof c === 'string' && c.toLowerCase() === 'x')
  if (ticked >= 0) {
    const [x] = yes.splice(ticked, 1)
    notes.push(`codes not placed (returned as stored until mapped): ${show(x)}, a ticked mark beside ${letters.map(show).join(', ')} for true; add it to "true" if the picking system means the same by it`)
  }
  const words = [normalizeName(column.name), ...nameTokens(column.name)]
  const language = words.some((w) => GERMAN_WORDS.has(w)) ? 'de' : words.some((w) => POLISH_WORDS.has(w)) ? 'pl' : undefined
  if (yes.length === 0 || no.length === 0) {
    const missing = yes.length === 0 ? 'true' : 'false'
    const seen = String((yes.length > 0 ? yes : no)[0])
    const partner = partnerOf(seen, language)
    if (partner === undefined) return { usable: false, notes: [`column '${column.name}' holds only ${show(seen)}: map it by hand with a value map`] }
    ;(missing === 'true' ? yes : no).push(partner)
    notes.push(`only ${show(seen)} seen: ${show(partner)} guessed for ${missing}; check it`)
  }
  return { usable: true, values: { true: oneOrMany(yes), false: oneOrMany(no) }, notes }
}

/** The API value a stations.type code looks like, if any. */
function stationTypeOf (code: StoredCode): string | undefined {
  const n = normalizeName(String(code))
  for (const [api, { codes, prefixes }] of Object.entries(STATION_TYPES)) {
    if (codes.includes(n) || prefixes.some((p) => n.startsWith(p))) return api
  }
  return undefined
}

/**
 * stations.type: places each stored code with the API value it looks like (V, VLM, Lift -> vlm;
 * K, C, Karussell -> carousel; P, PTL -> ptl; M, H, Manuell, handmatig -> manual) and lists those it cannot place.
 */
export function proposeStationTypeMap (category: Category, rows: CodeCount[]): MapProposal {
  if (rows.length > MAX_CODES) return { usable: true, notes: [`more than ${MAX_CODES} distinct values: no value map proposed`] }
  // a code is placed regardless of case, so no two types' codes differ only in case and the map matches
  // regardless of case: 'l' beside 'L' needs no place of its own, as in a flag's map
  const codes = codesOf(rows, category === 'integer', true)
  if (codes.length === 0) return { usable: true, notes: ['no rows: no value map proposed'] }
  // codes that already are the API's values need no map
  if (codes.every(({ code }) => Object.hasOwn(STATION_TYPES, code))) return { usable: true, notes: [] }
  const placed = new Map<string, StoredCode[]>()
  const unplaced: StoredCode[] = []
  for (const { code } of codes) {
    const api = stationTypeOf(code)
    if (api === undefined) unplaced.push(code)
    else placed.set(api, [...placed.get(api) ?? [], code])
  }
  const notes = unplaced.length > 0 ? [`codes not placed (returned as stored until mapped): ${unplaced.map(show).join(', ')}`] : []
  // numbers are no type the API takes: without a map no station could be created (storageProblems)
  if (placed.size === 0 && category !== 'text' && category !== 'ntext') notes.push(`a number column needs a value map from these codes to ${Object.keys(STATION_TYPES).join(', ')} before the gateway starts`)
  if (placed.size === 0) return { usable: true, notes }
  const values: ValueMap = {}
  for (const api of Object.keys(STATION_TYPES)) {
    const list = placed.get(api)
    if (list !== undefined) values[api] = oneOrMany(list)
  }
  // a type no stored code stands for yet: a create or update with it would be a 400 under this map
  const missing = Object.keys(STATION_TYPES).filter((api) => !placed.has(api))
  if (missing.length > 0) notes.push(`no stored code for ${missing.join(', ')}: with this map a station of ${missing.length === 1 ? 'that type' : 'those types'} cannot be created or set; add the picking system's code for ${missing.length === 1 ? 'it' : 'each'} to the map`)
  // German programs use K for Karussell and for Kommissionierung (a picking place, pick-to-light) alike
  const k = placed.get('carousel')?.find((code) => typeof code === 'string' && code.trim().toUpperCase() === 'K')
  if (k !== undefined && !placed.has('ptl')) notes.push(`${show(k)} is taken for Karussell (carousel); where it stands for Kommissionierung (a picking place with pick-to-light), map it to ptl instead`)
  return { usable: true, values, notes }
}

const USER_TYPES = ['admin', 'user', 'application']

/**
 * users.type: no guess (a code taken for the wrong type would give a picking system's operators
 * rights, admin among them, they do not have there), but every stored code that is no user type is
 * named, with the value map it needs: unmapped, such a user has no rights, and the licence does not count it.
 */
export function proposeUserTypeMap (column: ColumnInfo, category: Category, rows: CodeCount[]): MapProposal {
  if (rows.length > MAX_CODES) return { usable: true, notes: [`more than ${MAX_CODES} distinct values: no value map proposed`] }
  const codes = codesOf(rows, category === 'integer')
  const unplaced = codes.filter(({ code }) => !USER_TYPES.includes(String(code))).map(({ code }) => code)
  if (unplaced.length === 0) return { usable: true, notes: [] }
  const example = USER_TYPES.map((api) => `"${api}": …`).join(', ')
  return {
    usable: true,
    notes: [`codes that are no user type (returned as stored until mapped; a user with one of them has no rights at all, and the licence does not count it): ${unplaced.map(show).join(', ')}; ` +
      `map each type to the picking system's code for it by hand: {"column": "${column.name}", "values": {${example}}} (not guessed: a wrong code would hand out rights)`]
  }
}

// ---- the whole proposal -------------------------------------------------------------------

/** The configured column names of a mapping (a column may be written as {column, values} in the file). */
function configuredColumns (mapping: TableMapping | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [field, c] of Object.entries(mapping?.columns ?? {})) {
    const name = typeof c === 'string' ? c : (c as { column?: unknown } | null)?.column
    if (typeof name === 'string') out[field] = name
  }
  return out
}

function isConfiguredTable (dialect: DialectName, table: TableInfo, mapping: TableMapping | undefined): boolean {
  if (mapping === undefined || table.name.toLowerCase() !== mapping.table.toLowerCase()) return false
  return dialect !== 'mssql' || (table.schema ?? 'dbo').toLowerCase() === (mapping.schema ?? 'dbo').toLowerCase()
}

/** Builds the configuration block from the matched fields. */
export function mappingBlock (dialect: DialectName, table: TableInfo, fields: FieldMatch[], absent: string[] = []): TableMappingConfig {
  const columns: TableMappingConfig['columns'] = {}
  for (const m of fields) {
    columns[m.field] = m.values !== undefined
      ? { column: m.column.name, values: m.values }
      : m.format !== undefined ? { column: m.column.name, format: m.format } : m.column.name
  }
  // fields the table has no column for, where the gateway can do without one: always null
  for (const field of absent) columns[field] = null
  return {
    ...(dialect === 'mssql' ? { schema: table.schema ?? 'dbo' } : {}),
    table: table.name,
    columns,
    ...(table.view ? { readOnly: true } : {})
  }
}

/** a column the gateway's own fields of a user table could be given in the picking system's table */
const INTERNAL_COLUMNS: Record<string, string> = { passwordHash: 'PasswordHash VARCHAR(255)', tokenVersion: 'TokenVersion INT NOT NULL DEFAULT 0' }

/**
 * Proposes one resource's mapping: the table (the configured one when it exists, else the best
 * by name and by how many fields its columns match), the columns, and value maps for code columns.
 */
export async function proposeMapping (db: Database, resource: ResourceName, tables: TableInfo[], current?: TableMapping): Promise<ResourceProposal> {
  const def = resources[resource]
  const fieldCount = Object.keys(def.fields).length
  const internal = Object.entries(def.fields).filter(([, f]) => f.internal === true).map(([name]) => name)
  const configuredTable = tables.find((t) => isConfiguredTable(db.dialect, t, current))
  const scored = tables
    .filter((t) => configurable(t.name) && (t.schema === undefined || configurable(t.schema)))
    .map((t) => ({ table: t, ...tableNameScore(resource, t) }))
    .filter((c) => c.score > 0 && c.table !== configuredTable)
    .sort((a, b) => b.score - a.score)
    // columns are read for the few best names only: a database may hold thousands of tables
    .slice(0, 6)
  const candidates = [
    ...(configuredTable === undefined ? [] : [{ table: configuredTable, score: 1000, reason: 'the configured mapping names it' }]),
    ...scored
  ]

  let best: { table: TableInfo, reason: string, total: number, columns: ColumnInfo[], proposal: ColumnProposal } | undefined
  const rejected: string[] = []
  for (const c of candidates) {
    const columns = await db.columns(tableMapping(c.table))
    const proposal = matchColumns(db.dialect, resource, c.table, columns, c.table === configuredTable ? configuredColumns(current) : {})
    const matched = proposal.fields.length
    const missingInternal = internal.filter((f) => proposal.unmatched.includes(f))
    if (missingInternal.length > 0) {
      // not a dead end: the README's "picking system's own user table" adds the column to the table
      rejected.push(`${qualified(c.table)} (no column for ${missingInternal.join(', ')}, which only the gateway's own table has until one is added: ` +
        `${missingInternal.map((f) => `ALTER TABLE … ADD ${INTERNAL_COLUMNS[f] ?? f}`).join('; ')}, then introspect again)`)
      continue
    }
    if (c.table !== configuredTable && matched < 2) {
      rejected.push(`${qualified(c.table)} (${matched} field${matched === 1 ? '' : 's'} matched)`)
      continue
    }
    const total = c.score + 4 * matched
    const better = best === undefined || total > best.total ||
      (total === best.total && ((best.table.view && !c.table.view) || (best.table.schema !== 'dbo' && c.table.schema === 'dbo')))
    if (better) best = { table: c.table, reason: c.reason, total, columns, proposal }
  }
  const others = candidates.filter((c) => c.table !== best?.table).map((c) => qualified(c.table))

  if (best === undefined) {
    const hint = resource === 'users'
      ? `the gateway keeps its users in its own table: 'picking-gateway db init' creates '${referenceMappings.users.table}'`
      : 'map it by hand'
    return {
      resource,
      why: `no table looks like ${resource}${rejected.length > 0 ? `: considered ${rejected.join(', ')}` : ''}; ${hint}`,
      fields: [],
      unmatched: Object.keys(def.fields),
      unmappedRequired: [],
      notes: []
    }
  }

  const { table, proposal } = best
  const notes: string[] = []
  const unmatched = [...proposal.unmatched]
  const fields: FieldMatch[] = []
  for (const m of proposal.fields) {
    const f = def.fields[m.field]
    const category = categoryOf(db.dialect, m.column, f.kind)
    const wantsCodes = f.kind === 'boolean' ? category !== 'bit' : CODE_FIELDS[resource]?.includes(m.field) === true
    // a time kept as a number, or as digits in SQLite text ('20240101'), or as numbers in a SQLite
    // DATETIME column, whose NUMERIC affinity keeps a trigger's strftime('%s','now'): the format its values show
    const fit = proposal.fits[m.field]
    const sqliteTimeNumbers = db.dialect === 'sqlite' && category === 'time' && sqliteNumericTime(m.column.type)
    if (fit === 'format' || (db.dialect === 'sqlite' && f.kind === 'datetime' && (category === 'text' || sqliteTimeNumbers))) {
      const sample = await valueCounts(db, timeValuesStatement(db.dialect, table, m.column.name, m.column.type))
      const { format, rows, misfits } = timeFormatOf(category, sample, db.dialect === 'sqlite')
      if (format !== undefined) {
        const notes = [`holds ${FORMAT_NAMES[format]}: proposed "format": "${format}"`]
        if (misfits.length > 0) {
          const count = misfits.reduce((sum, v) => sum + v.count, 0)
          const some = misfits.slice(0, 3).map((v) => show(v.value as StoredCode)).join(', ')
          const looked = sample.length >= TIME_SAMPLE ? ` (its ${TIME_SAMPLE} most frequent values)` : ''
          notes.push(`${count} of the ${rows} rows with a date looked at${looked} hold values that do not fit it, such as ${some}: they read as null under it (and are logged once); correct them in the database, or check the format`)
        }
        fields.push({ ...m, format, notes })
        continue
      }
      if (fit === 'format') {
        unmatched.push(m.field)
        notes.push(`${m.field}: column '${m.column.name}' (${describeType(m.column)}) may hold times, but its values show no format the gateway knows (Unix time, YYYYMMDD, YYYYMMDDhhmmss); map it by hand, with "format" if it has one`)
        continue
      }
    }
    // a SQLite flag column keeps what its program wrote, whatever its declared type (BOOLEAN and INTEGER
    // too: SQLite binds no type): 'J'/'N' text needs a map (without one it reads as null, and true is
    // written as 1), a 0/1 number does not
    const sqliteFlag = db.dialect === 'sqlite' && f.kind === 'boolean' && (category === 'bit' || category === 'integer')
    const values = async (): Promise<CodeCount[]> => await valueCounts(db, distinctValuesStatement(db.dialect, table, m.column.name, m.column.type))
    const flagRows = sqliteFlag ? await values() : []
    const textFlag = flagRows.some((r) => typeof r.value === 'string')
    if ((wantsCodes && groupable(db.dialect, m.column, category)) || textFlag) {
      const rows = textFlag ? flagRows : await values()
      const map = f.kind === 'boolean' ? proposeBooleanMap(m.column, textFlag ? 'text' : category, rows) : resource === 'users' ? proposeUserTypeMap(m.column, category, rows) : proposeStationTypeMap(category, rows)
      if (!map.usable) {
        unmatched.push(m.field)
        notes.push(`${m.field}: ${map.notes.join('; ')}`)
        continue
      }
      fields.push({ ...m, values: map.values, notes: map.notes })
    } else if (fit === 'codes') {
      unmatched.push(m.field)
      notes.push(`${m.field}: column '${m.column.name}' (${describeType(m.column)}) holds codes that cannot be read here: map it by hand with a value map`)
    } else {
      // SQLite has no date type: text is how the gateway itself stores date/time there
      const weak = fit === 'weak' && !(db.dialect === 'sqlite' && f.kind === 'datetime')
      fields.push({ ...m, notes: weak ? [`the column's type (${describeType(m.column)}) is a second-best fit for ${f.kind === 'integer' ? 'an integer' : `a ${f.kind}`}`] : [] })
    }
  }
  const order = Object.keys(def.fields)
  unmatched.sort((a, b) => order.indexOf(a) - order.indexOf(b))

  // the configured table's own settings stay (its defaults fill columns no field maps)
  const kept = table === configuredTable ? current : undefined
  // and so do its value maps and formats, which are the integrator's (a user type's codes are never
  // guessed): a proposal pasted again must not drop them, nor a field whose codes no guess reads
  if (kept !== undefined) {
    for (const [field, name] of Object.entries(kept.columns)) {
      const values = kept.values?.[field]
      const format = kept.timeFormats?.[field]
      const column = best.columns.find((c) => c.name.toLowerCase() === name.toLowerCase())
      const i = fields.findIndex((m) => m.field === field)
      // a field the proposal matched no column to keeps the configured one (an id mapped by hand to one column of a composite key)
      const byHand = i < 0 && unmatched.includes(field)
      if ((values === undefined && format === undefined && !byHand) || column === undefined) continue
      if (i >= 0 && fields[i].column !== column) continue
      const match: FieldMatch = { field, column, reason: 'the configured column', values, format, notes: values === undefined && format === undefined ? ['as configured'] : ['value map or format as configured'] }
      if (i >= 0) fields[i] = { ...fields[i], values, format, notes: match.notes }
      else {
        fields.push(match)
        if (unmatched.includes(field)) unmatched.splice(unmatched.indexOf(field), 1)
        // the proposal's own note on the codes it could not read: the configured map reads them
        for (let n = notes.length - 1; n >= 0; n--) if (notes[n].startsWith(`${field}: `)) notes.splice(n, 1)
      }
    }
    fields.sort((a, b) => order.indexOf(a.field) - order.indexOf(b.field))
  }
  const mapped = new Set([...fields.map((m) => m.column.name.toLowerCase()), ...Object.keys(kept?.defaults ?? {}).map((c) => c.toLowerCase())])
  const unmappedRequired = table.view
    ? []
    : best.columns.filter((c) => !mapped.has(c.name.toLowerCase()) && !c.nullable && !c.hasDefault && !c.identity && !c.computed)
  const absent = unmatched.filter((f) => canBeAbsent(def, f))
  const essential = unmatched.filter((f) => !canBeAbsent(def, f))
  if (absent.length > 0) notes.push(`no column for ${absent.join(', ')}: mapped to null (always null in the API, not writable); map ${absent.length === 1 ? 'it' : 'them'} by hand if the table has one`)
  if (essential.length > 0) notes.push(`no column for ${essential.join(', ')}: the gateway needs ${essential.length === 1 ? 'it' : 'them'}; map ${essential.length === 1 ? 'it' : 'them'} by hand, or add ${essential.length === 1 ? 'a column' : 'columns'} to the table where it has none`)
  // no column unique by itself (a composite key: (mag_code, artikelcode)): the natural key's column can still be the id
  const natural = fields.find((m) => m.field === def.naturalKey)
  if (essential.includes('id') && natural !== undefined && natural.column.unique !== true) {
    notes.push(`id: no column is unique by itself; "id": "${natural.column.name}" (the ${natural.field}'s column, as for a table keyed by it) lists every row, while a read, update or delete of an id that several rows hold is a 409 (README, "Day one: mapping"); or add a column unique by itself to the table`)
  }
  for (const c of unmappedRequired) {
    // bytes take no value of the configuration (start-up refuses them in "defaults"): only the database's own default
    const bytes = holdsBytes(db.dialect, c.type)
    const given = bytes ? '' : `give it a value every create writes ("defaults": {"${c.name}": …}), `
    notes.push(`column '${c.name}' (${describeType(c)}) is NOT NULL without a default and not mapped: inserts through the gateway would fail; map it, ${given}give it a default in the database${bytes ? ` (ALTER TABLE … ADD DEFAULT 0x FOR [${c.name}])` : ''}, or set "readOnly": true`)
  }
  const id = fields.find((m) => m.field === 'id')
  const keyed = id !== undefined && fields.some((m) => m.field === def.naturalKey && m.column === id.column)
  if (!table.view && id !== undefined && !keyed && !id.column.identity && !id.column.hasDefault && kept?.newIds === undefined) {
    notes.push(`id column '${id.column.name}' is neither an identity column nor has a default: the gateway cannot create rows; give it one, set "newIds": "max+1" if the picking system numbers its rows as the largest id plus one (not from a counter table), or set "readOnly": true`)
  }
  if (table.view) notes.push('a view: proposed "readOnly": true (list and read only)')
  // a time type, or SQLite text without a format: SQLite has no time type, so its programs keep times as text
  // ('2026-03-29T01:30:00'), local time as often as not, which read as UTC would be an hour or two off
  const localTime = (m: FieldMatch): boolean => {
    if (def.fields[m.field].kind !== 'datetime' || m.column.type === 'datetimeoffset') return false
    const category = categoryOf(db.dialect, m.column, 'datetime')
    return category === 'time' || (db.dialect === 'sqlite' && m.format === undefined && category === 'text')
  }
  // the configured table's time zone is the integrator's decision already
  if (table !== configuredTable && fields.some(localTime)) {
    notes.push('date/time columns are read as UTC; if they hold local time, add "timeZone" (for example "Europe/Berlin")')
  }
  if (proposal.unnamable.length > 0) notes.push(`columns the configuration cannot name, not considered: ${proposal.unnamable.join(', ')}`)

  const why = `${best.reason}; ${fields.length} of ${fieldCount} fields matched` +
    (others.length > 0 ? `; also considered: ${others.join(', ')}` : '')
  const mapping = mappingBlock(db.dialect, table, fields, absent)
  if (kept?.timeZone !== undefined) mapping.timeZone = kept.timeZone
  for (const [field, timeZone] of Object.entries(kept?.timeZones ?? {})) {
    const spec = mapping.columns[field]
    if (typeof spec === 'string') mapping.columns[field] = { column: spec, timeZone }
    else if (spec !== null && spec !== undefined) mapping.columns[field] = { ...spec, timeZone }
  }
  // a configured "pad" is the integrator's decision, where the data cannot tell (an empty table): kept as configured
  for (const [field, pad] of Object.entries(kept?.pads ?? {})) {
    const spec = mapping.columns[field]
    if (typeof spec === 'string') mapping.columns[field] = { column: spec, pad }
    else if (spec !== null && spec !== undefined) mapping.columns[field] = { ...spec, pad }
  }
  if (kept?.newIds !== undefined && !keyed) mapping.newIds = kept.newIds
  if (kept?.defaults !== undefined) mapping.defaults = kept.defaults
  return { resource, table, why, fields, unmatched, unmappedRequired, notes, mapping }
}

/** Lists the tables and proposes a mapping for every resource. */
export async function introspect (db: Database, current: Partial<Record<ResourceName, TableMapping>> = {}): Promise<Introspection> {
  const tables = await listTables(db)
  const proposals = {} as Record<ResourceName, ResourceProposal>
  for (const name of Object.keys(resources) as ResourceName[]) proposals[name] = await proposeMapping(db, name, tables, current[name])
  return { dialect: db.dialect, tables, resources: proposals }
}

/** `{"mapping": {...}}` for the configuration file: the resources a table was found for. */
export function mappingConfig (result: Introspection): { mapping: Partial<Record<ResourceName, TableMappingConfig>> } {
  const mapping: Partial<Record<ResourceName, TableMappingConfig>> = {}
  for (const [name, p] of Object.entries(result.resources) as Array<[ResourceName, ResourceProposal]>) {
    if (p.mapping !== undefined) mapping[name] = p.mapping
  }
  return { mapping }
}

/** The human-readable report (without the JSON that follows it). */
export function formatReport (result: Introspection): string[] {
  const lines: string[] = []
  const views = result.tables.filter((t) => t.view).length
  lines.push(`Database (${result.dialect}): ${result.tables.length - views} table${result.tables.length - views === 1 ? '' : 's'}, ${views} view${views === 1 ? '' : 's'}`)
  const width = Math.max(0, ...result.tables.map((t) => qualified(t).length))
  for (const t of result.tables) {
    lines.push(`  ${qualified(t).padEnd(width)}  ${t.view ? 'view ' : 'table'}${t.rows === undefined ? '' : `  ${t.rows} row${t.rows === 1 ? '' : 's'}`}`.trimEnd())
  }
  for (const p of Object.values(result.resources)) {
    lines.push('')
    if (p.table === undefined) {
      lines.push(`${p.resource}: no table (${p.why})`)
      continue
    }
    lines.push(`${p.resource} -> ${qualified(p.table)} (${p.table.view ? 'view' : 'table'}): ${p.why}`)
    const fieldWidth = Math.max(...Object.keys(resources[p.resource].fields).map((f) => f.length))
    for (const field of Object.keys(resources[p.resource].fields)) {
      const m = p.fields.find((x) => x.field === field)
      if (m === undefined) {
        lines.push(`  ${field.padEnd(fieldWidth)}  -  (no column)`)
        continue
      }
      const spec = p.mapping?.columns[field]
      const pad = typeof spec === 'object' && spec !== null ? spec.pad : undefined
      const padding = pad !== undefined ? [pad ? 'written padded ("pad": true)' : 'written as sent ("pad": false)'] : m.column.padsToWidth === true ? [`padded to ${m.column.maxLength!}, written so`] : []
      const flags = [describeType(m.column), ...padding, ...(m.column.nullable ? [] : ['not null']), ...(m.column.identity ? ['identity'] : []), ...(m.column.computed ? ['computed'] : [])]
      lines.push(`  ${field.padEnd(fieldWidth)}  ${m.column.name} (${flags.join(', ')}; by ${m.reason})${m.values === undefined ? '' : `  values ${JSON.stringify(m.values)}`}`)
      for (const note of m.notes) lines.push(`  ${''.padEnd(fieldWidth)}    ${note}`)
    }
    for (const note of p.notes) lines.push(`  note: ${note}`)
  }
  return lines
}
