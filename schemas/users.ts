import { Type, type Static } from '@sinclair/typebox'
import { COMMON_PATTERN_RULES, NullableString, Timestamp, VISIBLE_USERNAME } from './common.js'

export const UserType = Type.Union([Type.Literal('admin'), Type.Literal('user'), Type.Literal('application')], {
  description: '`application` may exchange its refresh token for a non-expiring application token'
})
export type UserType = Static<typeof UserType>

/** Something besides spaces (names are stored trimmed), and no control or invisible characters: VISIBLE_USERNAME, whose words the 400 gives (a 'u' pattern: check it with hiddenCharacter, not Value.Check) */
export const USERNAME_RULE = COMMON_PATTERN_RULES[VISIBLE_USERNAME]
/** VISIBLE_USERNAME compiled as Ajv does, with the 'u' flag: TypeBox's Value.Check compiles a pattern without it */
export const VISIBLE_USERNAME_RE = new RegExp(VISIBLE_USERNAME, 'u')
export const Username = Type.String({ minLength: 1, maxLength: 64, pattern: VISIBLE_USERNAME, description: 'Case-insensitive; stored trimmed and in lower case' })
/** a password's length in characters (code points, as the API's validator counts them); the command line checks the same */
export const PASSWORD_LENGTH = { min: 8, max: 1024 } as const
const Password = Type.String({ minLength: PASSWORD_LENGTH.min, maxLength: PASSWORD_LENGTH.max, description: 'Write-only; stored as an argon2id hash' })

export const User = Type.Object({
  id: Type.Integer(),
  username: Type.String(),
  type: UserType,
  displayName: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  source: Type.Union([Type.Literal('local'), Type.Literal('sso')], {
    description: '`local`: logs in with a password here; `sso`: created by an identity provider\'s token (no password here, type set by the provider)'
  }),
  lastLoginAt: Type.Union([Timestamp, Type.Null()]),
  createdAt: Timestamp,
  modifiedAt: Timestamp
}, { additionalProperties: false })
export type User = Static<typeof User>

export const UserCreate = Type.Object({
  username: Username,
  password: Password,
  type: Type.Optional(UserType),
  displayName: Type.Optional(NullableString({ maxLength: 200 })),
  enabled: Type.Optional(Type.Boolean())
}, { additionalProperties: false })
export type UserCreate = Static<typeof UserCreate>

export const UserUpdate = Type.Object({
  username: Type.Optional(Username),
  password: Type.Optional(Password),
  type: Type.Optional(UserType),
  displayName: Type.Optional(NullableString({ maxLength: 200 })),
  enabled: Type.Optional(Type.Boolean())
}, { additionalProperties: false, minProperties: 1 })
export type UserUpdate = Static<typeof UserUpdate>

export const LoginBody = Type.Object({
  // the rule of every stored name: a control character could find a row under SQL Server's collation
  // (which gives NCHAR(0) no weight) while counting as another name for the login throttle
  username: Type.String({ minLength: 1, maxLength: 256, pattern: VISIBLE_USERNAME }),
  password: Type.String({ minLength: 1, maxLength: 1024 })
}, { additionalProperties: false })
export type LoginBody = Static<typeof LoginBody>

export const LoginResponse = Type.Object({
  login: Type.Literal(true),
  accessToken: Type.String(),
  refreshToken: Type.String(),
  expiresIn: Type.Integer({ description: 'Access token lifetime in seconds' })
})

export const RefreshResponse = Type.Object({
  accessToken: Type.String(),
  expiresIn: Type.Integer()
})

export const ApplicationTokenResponse = Type.Object({
  token: Type.String({ description: 'Non-expiring access token; revoked when the user is disabled, deleted or renamed, or its password or type changes' })
})
