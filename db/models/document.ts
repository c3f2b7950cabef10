import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';

export class Document extends Model<InferAttributes<Document>, InferCreationAttributes<Document>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare workspaceId: number;
  declare name: string;
  declare mimeType: CreationOptional<string>;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    Document.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        workspaceId: { type: DataTypes.BIGINT, allowNull: false },
        name: { type: DataTypes.TEXT, allowNull: false },
        mimeType: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'application/octet-stream' },
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'documents', underscored: true, updatedAt: false },
    );
  }
}
