import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';
import type { KeyKind } from '../../domain/apiKeys';

export class ApiKey extends Model<InferAttributes<ApiKey>, InferCreationAttributes<ApiKey>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare kind: KeyKind;
  declare workspaceId: CreationOptional<number | null>;
  declare partnerId: CreationOptional<number | null>;
  declare name: CreationOptional<string | null>;
  declare environment: CreationOptional<'live' | 'test'>;
  /** SHA-256 of the key; the plain text is never stored. */
  declare keyHash: string;
  declare keyHint: string;
  declare scopes: string[];
  declare expiresAt: CreationOptional<Date | null>;
  declare revokedAt: CreationOptional<Date | null>;
  declare lastUsedAt: CreationOptional<Date | null>;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    ApiKey.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        kind: { type: DataTypes.TEXT, allowNull: false },
        workspaceId: DataTypes.BIGINT,
        partnerId: DataTypes.BIGINT,
        name: DataTypes.TEXT,
        environment: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'live' },
        keyHash: { type: DataTypes.TEXT, allowNull: false },
        keyHint: { type: DataTypes.TEXT, allowNull: false },
        scopes: { type: DataTypes.ARRAY(DataTypes.TEXT), allowNull: false },
        expiresAt: DataTypes.DATE,
        revokedAt: DataTypes.DATE,
        lastUsedAt: DataTypes.DATE,
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'api_keys', underscored: true, updatedAt: false },
    );
  }
}
