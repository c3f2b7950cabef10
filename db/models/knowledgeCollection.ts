import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';

export class KnowledgeCollection extends Model<InferAttributes<KnowledgeCollection>, InferCreationAttributes<KnowledgeCollection>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare workspaceId: number;
  declare name: string;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    KnowledgeCollection.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        workspaceId: { type: DataTypes.BIGINT, allowNull: false },
        name: { type: DataTypes.TEXT, allowNull: false },
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'knowledge_collections', underscored: true, updatedAt: false },
    );
  }
}
