import { Type, type Static } from '@sinclair/typebox'
import { NullableString, Timestamp } from './common.js'

export const UserType = Type.Union([Type.Literal('admin'), Type.Literal('user'), Type.Literal('application')], {
  description: '`application` may exchange its refresh token for a non-expiring application token'
})
export type UserType = Static<typeof UserType>

/**
 * Characters that show as nothing (soft hyphen, zero-width space and joiners, direction marks and
 * embeddings, word joiner, BOM): 'ad\u200bmin' reads as admin in a list, and SQL Server's collations
 * give most of them no weight, so at a login it could find admin's row under a throttle count of its own.
 */
const INVISIBLE = '\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ufeff\\ufff9-\\ufffb'
/** Something besides spaces (names are stored trimmed), and no control or invisible characters. */
const USERNAME_PATTERN = `^[^\\u0000-\\u001f\\u007f-\\u009f${INVISIBLE}]*[^\\s\\u0000-\\u001f\\u007f-\\u009f${INVISIBLE}][^\\u0000-\\u001f\\u007f-\\u009f${INVISIBLE}]*$`
export const USERNAME_RULE = 'must hold a character other than spaces, and no control or invisible characters (zero-width spaces, direction marks)'
export const Username = Type.String({ minLength: 1, maxLength: 64, pattern: USERNAME_PATTERN, description: 'Case-insensitive; stored trimmed and in lower case' })

/** The username's pattern in words (COMMON_PATTERN_RULES) */
export const USER_PATTERN_RULES: Record<string, string> = { [USERNAME_PATTERN]: USERNAME_RULE }
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
  username: Type.String({ minLength: 1, maxLength: 256, pattern: USERNAME_PATTERN }),
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
  token: Type.String({ description: 'Non-expiring access token; revoked when the user is disabled, deleted or its password changes' })
})
